//! `threadspawn --plot FILE.svg`: the report as a chart (plotters, SVG backend only).
//!
//! Top panel: ops/s against workers, both axes logarithmic. Each uproc subject is a
//! colour: its measured medians as dots with min-max bars, its prediction (1..64 workers)
//! as a dashed line of the same colour; the peers' measured medians are thin grey-ish
//! reference lines. Bottom panel: the lock budget, one stacked bar per uproc subject and
//! measured worker count, one segment per global lock's hold ns per life cycle.

use crate::load::LOCK_NAMES;
use crate::report::{Report, Subject};
use plotters::prelude::*;
use std::path::Path;

const SUBJECT_COLOURS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];
const PEER_COLOURS: [RGBColor; 3] = [
    RGBColor(60, 60, 60),
    RGBColor(140, 110, 80),
    RGBColor(150, 150, 150),
];
const LOCK_COLOURS: [RGBColor; 3] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
];

type Failure = Box<dyn std::error::Error>;

/// Draws `report` into an SVG file at `path`.
pub fn draw(report: &Report, path: &Path) -> Result<(), Failure> {
    let root = SVGBackend::new(path, (1100, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(600);
    throughput(report, &top)?;
    budget(report, &bottom)?;
    root.present()?;
    Ok(())
}

fn throughput(
    report: &Report,
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Failure> {
    let preds = report.predictions();
    let mut values: Vec<f64> = preds
        .iter()
        .flat_map(|p| p.ops_per_s.iter().copied())
        .collect();
    for r in &report.rows {
        let (min, max) = r.min_max();
        values.extend([min, max]);
    }
    values.retain(|v| v.is_finite() && *v > 0.0);
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(1e3)
        * 0.7;
    let hi = values.iter().copied().fold(1e4, f64::max) * 1.5;
    let xmax = f64::from(report.options.predict_to).max(2.0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "threadspawn: ops/s vs workers (dots: measured median, bars: min-max; dashed: PREDICTED by the model)",
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d((1f64..xmax).log_scale(), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("workers")
        .y_desc("life cycles per second")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (i, subject) in report.uproc_subjects().into_iter().enumerate() {
        let colour = SUBJECT_COLOURS[i % SUBJECT_COLOURS.len()];
        let rows: Vec<_> = report
            .rows
            .iter()
            .filter(|r| r.subject == subject)
            .collect();
        chart
            .draw_series(rows.iter().map(|r| {
                let (min, max) = r.min_max();
                ErrorBar::new_vertical(r.workers as f64, min, r.median(), max, colour.filled(), 8)
            }))?
            .label(format!("{} (measured)", subject.label()))
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
        chart.draw_series(
            rows.iter()
                .map(|r| Circle::new((r.workers as f64, r.median()), 4, colour.filled())),
        )?;
        if let Some(p) = preds.iter().find(|p| p.subject == subject) {
            let line = (p.ops_per_s.iter().enumerate()).map(|(i, x)| ((i + 1) as f64, *x));
            chart
                .draw_series(DashedLineSeries::new(line, 8, 5, colour.stroke_width(2)))?
                .label(format!(
                    "{} PREDICTED (inputs at {}w)",
                    subject.label(),
                    p.from_workers
                ))
                .legend(move |(x, y)| {
                    PathElement::new(
                        vec![(x, y), (x + 8, y), (x + 12, y), (x + 20, y)],
                        colour.stroke_width(2),
                    )
                });
        }
    }
    let peers = [Subject::Pthread, Subject::StdThread, Subject::Tokio];
    for (peer, colour) in peers.into_iter().zip(PEER_COLOURS) {
        let pts: Vec<(f64, f64)> = (report.rows.iter())
            .filter(|r| r.subject == peer)
            .map(|r| (r.workers as f64, r.median()))
            .collect();
        if !pts.is_empty() {
            chart
                .draw_series(LineSeries::new(pts, colour.stroke_width(1)))?
                .label(format!("{} (measured, reference)", peer.label()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

fn budget(
    report: &Report,
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> Result<(), Failure> {
    let bars: Vec<(String, Vec<f64>)> = (report.rows.iter())
        .filter_map(|r| {
            let b = r.budgets(report.clock_ns)?;
            let Subject::Uproc { profile, body } = r.subject else {
                return None;
            };
            let label = format!("{profile} {} {}w", body.name(), r.workers);
            Some((label, b.iter().map(|l| l.hold_ns_per_cycle).collect()))
        })
        .collect();
    let top = bars
        .iter()
        .map(|(_, h)| h.iter().filter(|v| v.is_finite()).sum::<f64>())
        .fold(1.0, f64::max);
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "lock budget: hold ns per life cycle (sampled), stacked by lock",
            ("sans-serif", 17),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top * 1.2)?;
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            bars.get(i as usize).map_or(String::new(), |b| b.0.clone())
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&label_of)
        .y_desc("ns held per life cycle")
        .draw()?;
    for (lock, (name, colour)) in LOCK_NAMES.iter().zip(LOCK_COLOURS).enumerate() {
        let rects = bars.iter().enumerate().map(|(i, (_, h))| {
            let below: f64 = h[..lock].iter().filter(|v| v.is_finite()).sum();
            let v = if h[lock].is_finite() { h[lock] } else { 0.0 };
            let x = i as f64;
            Rectangle::new(
                [(x - 0.3, below), (x + 0.3, below + v)],
                colour.mix(0.8).filled(),
            )
        });
        chart
            .draw_series(rects)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
