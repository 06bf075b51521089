//! `threadspawn --plot FILE.svg`: the report as a chart (plotters, SVG backend only).
//!
//! Top panel: ops/s against workers, both axes logarithmic. Each uproc subject is a
//! colour: its measured medians as dots with min-max bars, its prediction (1..64 workers)
//! as a dashed line of the same colour; the peers' measured medians are thin dark
//! reference lines. Bottom panel: the lock budget, one stacked bar per uproc subject and
//! measured worker count, one segment per global lock's hold ns per life cycle.

use crate::report::{Report, Subject};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const COLOURS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];
const GREYS: [RGBColor; 3] = [
    RGBColor(40, 40, 40),
    RGBColor(120, 90, 60),
    RGBColor(150, 150, 150),
];

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Failure = Box<dyn std::error::Error>;

/// Draws `report` into an SVG file at `path`.
pub fn draw(report: &Report, path: &Path) -> Result<(), Failure> {
    let root = SVGBackend::new(path, (1100, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(600);
    throughput(report, &top)?;
    budget(report, &bottom)?;
    Ok(root.present()?)
}

fn builder<'a, 'b>(area: &'a Area<'b>, caption: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.caption(caption, ("sans-serif", 17)).margin(12);
    b.x_label_area_size(40).y_label_area_size(80);
    b
}

fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Result<(), Failure> {
    let mut labels = chart.configure_series_labels();
    labels.position(at).label_font(("sans-serif", 12));
    labels
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn throughput(report: &Report, area: &Area<'_>) -> Result<(), Failure> {
    let preds = report.predictions();
    let mut values: Vec<f64> = preds.iter().flat_map(|p| p.ops_per_s.clone()).collect();
    values.extend(
        report
            .rows
            .iter()
            .flat_map(|r| [r.min_max().0, r.min_max().1]),
    );
    values.retain(|v| v.is_finite() && *v > 0.0);
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(1e6)
        * 0.7;
    let hi = values.iter().copied().fold(1e4, f64::max) * 1.5;
    let xmax = f64::from(report.options.predict_to).max(2.0);
    let caption = "threadspawn: ops/s vs workers (dots: measured median, bars: min-max; \
                   dashed: PREDICTED by the model)";
    let mut chart = builder(area, caption)
        .build_cartesian_2d((1f64..xmax).log_scale(), (lo..hi).log_scale())?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("workers")
        .y_desc("life cycles per second (log)");
    mesh.light_line_style(WHITE)
        .x_label_formatter(&|v| format!("{v:.0}"));
    mesh.y_label_formatter(&|v| si(*v)).draw()?;
    for (i, subject) in report.uproc_subjects().into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let rows: Vec<_> = report
            .rows
            .iter()
            .filter(|r| r.subject == subject)
            .collect();
        let bar = |r: &&crate::report::Row| {
            let ((min, max), x) = (r.min_max(), r.workers as f64);
            ErrorBar::new_vertical(x, min, r.median(), max, colour.filled(), 8)
        };
        let label = format!("{} (measured)", subject.label());
        let dot = move |(x, y)| Circle::new((x + 10, y), 4, colour.filled());
        chart
            .draw_series(rows.iter().map(bar))?
            .label(label)
            .legend(dot);
        let dots = rows
            .iter()
            .map(|r| Circle::new((r.workers as f64, r.median()), 4, colour.filled()));
        chart.draw_series(dots)?;
        let Some(p) = preds.iter().find(|p| p.subject == subject) else {
            continue;
        };
        let line = p
            .ops_per_s
            .iter()
            .enumerate()
            .map(|(i, x)| ((i + 1) as f64, *x));
        let style = colour.stroke_width(2);
        let label = format!(
            "{} PREDICTED (inputs at {}w)",
            subject.label(),
            p.from_workers
        );
        let dash =
            move |(x, y)| PathElement::new([(x, y), (x + 8, y), (x + 12, y), (x + 20, y)], style);
        chart
            .draw_series(DashedLineSeries::new(line, 8, 5, style))?
            .label(label)
            .legend(dash);
    }
    let peers = [Subject::Pthread, Subject::StdThread, Subject::Tokio];
    for (peer, colour) in peers.into_iter().zip(GREYS) {
        let rows = report.rows.iter().filter(|r| r.subject == peer);
        let pts: Vec<(f64, f64)> = rows.map(|r| (r.workers as f64, r.median())).collect();
        if !pts.is_empty() {
            let label = format!("{} (measured, reference)", peer.label());
            let line = move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour);
            chart
                .draw_series(LineSeries::new(pts, colour))?
                .label(label)
                .legend(line);
        }
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

/// `1.5M`, `250k`, `900`.
fn si(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", v / 1e6),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

fn budget(report: &Report, area: &Area<'_>) -> Result<(), Failure> {
    let mut names: Vec<&'static str> = Vec::new();
    let bars: Vec<(String, Vec<(&'static str, f64)>)> = (report.rows.iter())
        .filter_map(|r| {
            let holds = r
                .budgets(report.clock_ns)?
                .into_iter()
                .map(|l| (l.lock, l.hold_ns_per_cycle));
            let Subject::Uproc { profile, body } = r.subject else {
                return None;
            };
            Some((
                format!("{profile} {} {}w", body.name(), r.workers),
                holds.collect(),
            ))
        })
        .collect();
    bars.iter().flat_map(|b| &b.1).for_each(|(n, _)| {
        if !names.contains(n) {
            names.push(n)
        }
    });
    // ns held per life cycle by the locks `names` in a bar
    let held = |h: &[(&str, f64)], names: &[&str]| -> f64 {
        h.iter()
            .filter(|(n, v)| names.contains(n) && v.is_finite())
            .map(|(_, v)| v)
            .sum()
    };
    let top = bars
        .iter()
        .map(|(_, h)| held(h, &names))
        .fold(1.0, f64::max);
    let n = bars.len().max(1) as f64;
    let caption = "lock budget: hold ns per life cycle (sampled), stacked by lock";
    let mut chart = builder(area, caption).build_cartesian_2d(-0.5..n - 0.5, 0.0..top * 1.2)?;
    let label_of = |x: &f64| match bars.get(x.round().max(0.0) as usize) {
        Some(b) if (x - x.round()).abs() < 1e-6 => b.0.clone(),
        _ => String::new(),
    };
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(bars.len() * 2 + 1)
        .x_label_formatter(&label_of);
    mesh.light_line_style(WHITE)
        .y_desc("ns held per life cycle")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    for (k, name) in names.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let rects = bars.iter().enumerate().map(|(i, (_, h))| {
            let (x, below, v) = (i as f64, held(h, &names[..k]), held(h, &names[k..=k]));
            Rectangle::new(
                [(x - 0.3, below), (x + 0.3, below + v)],
                colour.mix(0.8).filled(),
            )
        });
        let key = move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled());
        chart.draw_series(rects)?.label(*name).legend(key);
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
