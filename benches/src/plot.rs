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

/// The uproc subjects' (and the locks') colours as `0xRRGGBB`, then the peers'.
const COLOURS: [u32; 6] = [0xd62728, 0x1f77b4, 0x2ca02c, 0x9467bd, 0xff7f0e, 0x17becf];
const GREYS: [u32; 3] = [0x282828, 0x785a3c, 0x969696];

/// Colour `i` of `palette`, round robin.
fn colour(palette: &[u32], i: usize) -> RGBColor {
    let c = palette[i % palette.len()];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

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
    labels.background_style(WHITE.mix(0.85)).border_style(BLACK);
    Ok(labels.draw()?)
}

fn throughput(report: &Report, area: &Area<'_>) -> Result<(), Failure> {
    let (rows, preds) = (&report.rows, report.predictions());
    let mut values: Vec<f64> = preds.iter().flat_map(|p| p.ops_per_s.clone()).collect();
    values.extend(rows.iter().flat_map(|r| <[f64; 2]>::from(r.min_max())));
    values.retain(|v| v.is_finite() && *v > 0.0);
    let lo = values.iter().copied().fold(1e6, f64::min) * 0.7;
    let hi = values.iter().copied().fold(1e4, f64::max) * 1.5;
    let xmax = f64::from(report.options.predict_to).max(2.0);
    let caption = "threadspawn: ops/s vs workers (dots: measured median, bars: min-max; \
                   dashed: PREDICTED by the model)";
    let mut chart = builder(area, caption)
        .build_cartesian_2d((1f64..xmax).log_scale(), (lo..hi).log_scale())?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("workers").light_line_style(WHITE);
    mesh.y_desc("life cycles per second (log)");
    mesh.x_label_formatter(&|v| format!("{v:.0}"));
    mesh.y_label_formatter(&|v| si(*v)).draw()?;
    for (i, subject) in report.uproc_subjects().into_iter().enumerate() {
        let (colour, rows) = (colour(&COLOURS, i), report.rows_of(subject));
        let rows: Vec<_> = rows
            .map(|r| (r.workers as f64, r.median(), r.min_max()))
            .collect();
        let filled = colour.filled();
        let bars = (rows.iter())
            .map(|&(x, y, (min, max))| ErrorBar::new_vertical(x, min, y, max, filled, 8));
        let label = format!("{} (measured)", subject.label());
        let dot = move |(x, y)| Circle::new((x + 10, y), 4, filled);
        chart.draw_series(bars)?.label(label).legend(dot);
        let dots = rows.iter().map(|&(x, y, _)| Circle::new((x, y), 4, filled));
        chart.draw_series(dots)?;
        let Some(p) = preds.iter().find(|p| p.subject == subject) else {
            continue;
        };
        let ys = p.ops_per_s.iter().copied();
        let line = (1..).zip(ys).map(|(n, y)| (f64::from(n), y));
        let (style, who, w) = (colour.stroke_width(2), subject.label(), p.from_workers);
        let label = format!("{who} PREDICTED (inputs at {w}w)");
        let dash =
            move |(x, y)| PathElement::new([(x, y), (x + 8, y), (x + 12, y), (x + 20, y)], style);
        let series = DashedLineSeries::new(line, 8, 5, style);
        chart.draw_series(series)?.label(label).legend(dash);
    }
    let peers = [Subject::Pthread, Subject::StdThread, Subject::Tokio];
    for (i, peer) in peers.into_iter().enumerate() {
        let (colour, rows) = (colour(&GREYS, i), report.rows_of(peer));
        let pts: Vec<(f64, f64)> = rows.map(|r| (r.workers as f64, r.median())).collect();
        if !pts.is_empty() {
            let label = format!("{} (measured, reference)", peer.label());
            let line = move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour);
            let series = LineSeries::new(pts, colour);
            chart.draw_series(series)?.label(label).legend(line);
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
    let bars: Vec<(String, Vec<(&'static str, f64)>)> = (report.rows.iter())
        .filter_map(|r| {
            let Subject::Uproc { profile, body } = r.subject else {
                return None;
            };
            let holds = r.budgets(report.clock_ns)?;
            let holds = holds.iter().map(|l| (l.lock, l.hold_ns_per_cycle));
            let name = format!("{profile} {} {}w", body.name(), r.workers);
            Some((name, holds.collect()))
        })
        .collect();
    let names = crate::dedup(bars.iter().flat_map(|b| b.1.iter().map(|(n, _)| *n)));
    // ns held per life cycle by the locks `names` in a bar
    let held = |h: &[(&str, f64)], names: &[&str]| -> f64 {
        let of_names = h.iter().filter(|(n, v)| names.contains(n) && v.is_finite());
        of_names.map(|(_, v)| v).sum()
    };
    let top = bars.iter().map(|b| held(&b.1, &names)).fold(1.0, f64::max);
    let n = bars.len().max(1) as f64;
    let caption = "lock budget: hold ns per life cycle (sampled), stacked by lock";
    let mut chart = builder(area, caption).build_cartesian_2d(-0.5..n - 0.5, 0.0..top * 1.2)?;
    let label_of = |x: &f64| match bars.get(x.round().max(0.0) as usize) {
        Some(b) if (x - x.round()).abs() < 1e-6 => b.0.clone(),
        _ => String::new(),
    };
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh().x_labels(bars.len() * 2 + 1);
    mesh.x_label_formatter(&label_of).light_line_style(WHITE);
    mesh.y_desc("ns held per life cycle");
    mesh.y_label_formatter(&|v| format!("{v:.0}")).draw()?;
    for (k, name) in names.iter().enumerate() {
        let (colour, fill) = (colour(&COLOURS, k), colour(&COLOURS, k).mix(0.8).filled());
        let rects = bars.iter().enumerate().map(|(i, (_, h))| {
            let (x, below, v) = (i as f64, held(h, &names[..k]), held(h, &names[k..=k]));
            Rectangle::new([(x - 0.3, below), (x + 0.3, below + v)], fill)
        });
        let key = move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled());
        chart.draw_series(rects)?.label(*name).legend(key);
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
