//! The report's charts, drawn by plotters' SVG backend into strings: line charts (time series,
//! per-iteration figures) with a legend beside the plot, and horizontal bar charts of ratios.
//! Text is laid out with plotters' font-free size estimate, so the same data gives the same
//! bytes on every machine.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor;

/// Tableau's 10 categorical colours: distinguishable, also in greyscale print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const FONT: &str = "sans-serif";
// plotters draws text at 1/1.24 of the size asked
const TITLE_SIZE: f64 = 20.0;
const LABEL_SIZE: f64 = 15.0;
const CHART_WIDTH_PX: u32 = 640;
const CHART_HEIGHT_PX: u32 = 340;
/// Lines with more points than this are thinned for drawing (see `thin`).
const MAX_POINTS_PER_LINE: usize = 800;
/// Legend and bar labels longer than this many characters are cut.
const MAX_LABEL_CHARS: usize = 44;

/// One line of a line chart; `dashed` draws it dashed (a live run beside a simulated one).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
    /// Marks each point (few points, e.g. iterations).
    pub markers: bool,
}

/// A row's label and a value per series (None leaves its bar out).
pub type BarRow = (String, Vec<Option<f64>>);

/// Horizontal bars: a row per label, a bar per series in each row (published and simulated,
/// say), and a dashed reference line at `reference` if any.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub series: Vec<String>,
    pub rows: Vec<BarRow>,
    pub reference: Option<f64>,
}

fn drawing_error<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw a chart: {e:?}")
}

/// `value` for an axis: 1.5M, 320k, 12, 0.25.
pub fn short_number(value: f64) -> String {
    let magnitude = value.abs();
    let trimmed = |text: String| {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    };
    if magnitude >= 1e9 {
        format!("{}G", trimmed(format!("{:.2}", value / 1e9)))
    } else if magnitude >= 1e6 {
        format!("{}M", trimmed(format!("{:.2}", value / 1e6)))
    } else if magnitude >= 1e4 {
        format!("{}k", trimmed(format!("{:.1}", value / 1e3)))
    } else if magnitude >= 100.0 || value == value.round() {
        format!("{value:.0}")
    } else {
        trimmed(format!("{value:.3}"))
    }
}

/// Cuts a label to MAX_LABEL_CHARS characters.
fn cut(label: &str) -> String {
    if label.chars().count() <= MAX_LABEL_CHARS {
        label.to_string()
    } else {
        let head: String = label.chars().take(MAX_LABEL_CHARS - 1).collect();
        format!("{head}…")
    }
}

/// At most about MAX_POINTS_PER_LINE points: the points are cut into buckets and each bucket
/// keeps its lowest and highest point in time order, so spikes survive the thinning.
pub fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS_PER_LINE {
        return points.to_vec();
    }
    let bucket = points.len().div_ceil(MAX_POINTS_PER_LINE / 2);
    let mut out = Vec::with_capacity(MAX_POINTS_PER_LINE + 2);
    for chunk in points.chunks(bucket) {
        let low = (0..chunk.len())
            .min_by(|&a, &b| chunk[a].1.total_cmp(&chunk[b].1))
            .unwrap_or(0);
        let high = (0..chunk.len())
            .max_by(|&a, &b| chunk[a].1.total_cmp(&chunk[b].1))
            .unwrap_or(0);
        let (first, second) = (low.min(high), low.max(high));
        out.push(chunk[first]);
        if second != first {
            out.push(chunk[second]);
        }
    }
    // the last sample is where a cumulative counter ends: always shown
    if let (Some(last), Some(shown)) = (points.last(), out.last()) {
        if last != shown {
            out.push(*last);
        }
    }
    out
}

/// A range around `low..high` that is never empty, with a little room above.
fn padded(low: f64, high: f64) -> std::ops::Range<f64> {
    if !(low.is_finite() && high.is_finite()) {
        return 0.0..1.0;
    }
    if high <= low {
        let pad = if low == 0.0 { 1.0 } else { low.abs() * 0.1 };
        return (low - pad)..(high + pad);
    }
    let pad = (high - low) * 0.05;
    let bottom = if low >= 0.0 {
        0.0_f64.max(low - pad)
    } else {
        low - pad
    };
    bottom..(high + pad)
}

/// The SVG of a line chart: the plot, then its legend to the right of it.
pub fn line_chart_svg(chart: &LineChart) -> Result<String, String> {
    let lines: Vec<(Line, RGBColor)> = chart
        .lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut line = line.clone();
            line.points = thin(&line.points);
            (line, PALETTE[i % PALETTE.len()])
        })
        .collect();
    let all = lines.iter().flat_map(|(l, _)| l.points.iter());
    let (mut x_low, mut x_high, mut y_low, mut y_high) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in all {
        x_low = x_low.min(x);
        x_high = x_high.max(x);
        y_low = y_low.min(y);
        y_high = y_high.max(y);
    }
    let x_range = if chart.markers {
        // iterations: half a step of room either side so the end markers are whole
        (x_low - 0.5)..(x_high + 0.5)
    } else if x_high > x_low {
        x_low..x_high
    } else {
        padded(x_low, x_high)
    };
    let y_range = padded(y_low.min(0.0), y_high);
    let legend_chars = lines
        .iter()
        .map(|(l, _)| cut(&l.label).chars().count())
        .max()
        .unwrap_or(0);
    let legend_width_px = (legend_chars as u32 * 7 + 48).clamp(90, 330);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(
            &mut svg,
            (CHART_WIDTH_PX + legend_width_px, CHART_HEIGHT_PX),
        )
        .into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let (plot_area, legend_area) = root.split_horizontally(CHART_WIDTH_PX);
        let mut plot = ChartBuilder::on(&plot_area)
            .caption(&chart.title, (FONT, TITLE_SIZE))
            .margin(10)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, y_range)
            .map_err(drawing_error)?;
        let whole_steps = chart.markers;
        plot.configure_mesh()
            .x_desc(&chart.x_label)
            .y_desc(&chart.y_label)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, LABEL_SIZE))
            .x_label_formatter(&|v| {
                if whole_steps && v.fract() != 0.0 {
                    String::new()
                } else {
                    short_number(*v)
                }
            })
            .y_label_formatter(&|v| short_number(*v))
            .light_line_style(RGBColor(236, 236, 236))
            .bold_line_style(RGBColor(210, 210, 210))
            .draw()
            .map_err(drawing_error)?;
        for (line, color) in &lines {
            let style = color.stroke_width(2);
            if line.dashed {
                plot.draw_series(DashedLineSeries::new(
                    line.points.iter().copied(),
                    6,
                    4,
                    style,
                ))
                .map_err(drawing_error)?;
            } else {
                plot.draw_series(LineSeries::new(line.points.iter().copied(), style))
                    .map_err(drawing_error)?;
            }
            if chart.markers {
                plot.draw_series(
                    line.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, color.filled())),
                )
                .map_err(drawing_error)?;
            }
        }
        // the legend beside the plot: it never hides a line
        let top_px = 40;
        for (i, (line, color)) in lines.iter().enumerate() {
            let y = top_px + i as i32 * 20;
            let points = vec![(6, y), (30, y)];
            let style = color.stroke_width(3);
            if line.dashed {
                for x in [6, 18] {
                    legend_area
                        .draw(&PathElement::new(vec![(x, y), (x + 8, y)], style))
                        .map_err(drawing_error)?;
                }
            } else {
                legend_area
                    .draw(&PathElement::new(points, style))
                    .map_err(drawing_error)?;
            }
            legend_area
                .draw(&Text::new(
                    cut(&line.label),
                    (36, y - 7),
                    (FONT, LABEL_SIZE).into_font().color(&BLACK),
                ))
                .map_err(drawing_error)?;
        }
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}

/// The SVG of a horizontal bar chart, the first row at the top, the legend above the plot.
pub fn bar_chart_svg(chart: &BarChart) -> Result<String, String> {
    let count = chart.rows.len() as u32;
    let per_row = chart.series.len().max(1) as u32;
    let labels: Vec<String> = chart.rows.iter().map(|(l, _)| cut(l)).collect();
    let label_chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_width_px = (label_chars as u32 * 7 + 16).clamp(60, 340);
    let values = chart.rows.iter().flat_map(|(_, v)| v.iter().flatten());
    let start = chart.reference.unwrap_or(0.0);
    let (low, high) = values.fold((start.min(0.0), start.max(0.0)), |(lo, hi), v| {
        (lo.min(*v), hi.max(*v))
    });
    let x_range = padded(low, high);
    let sliver = (x_range.end - x_range.start) * 0.004;
    let legend_height_px = if chart.series.len() > 1 { 24 } else { 0 };
    let height_px = 100 + legend_height_px + count.max(1) * (8 + 16 * per_row);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (CHART_WIDTH_PX + 240, height_px))
            .into_drawing_area();
        root.fill(&WHITE).map_err(drawing_error)?;
        let (legend_area, plot_area) = root.split_vertically(legend_height_px + 34);
        legend_area
            .draw(&Text::new(
                chart.title.clone(),
                ((CHART_WIDTH_PX + 240) as i32 / 2, 10),
                (FONT, TITLE_SIZE)
                    .into_font()
                    .color(&BLACK)
                    .pos(text_anchor::Pos::new(
                        text_anchor::HPos::Center,
                        text_anchor::VPos::Top,
                    )),
            ))
            .map_err(drawing_error)?;
        if chart.series.len() > 1 {
            let mut x = label_width_px as i32 + 20;
            for (i, name) in chart.series.iter().enumerate() {
                legend_area
                    .draw(&Rectangle::new(
                        [(x, 38), (x + 14, 50)],
                        PALETTE[i % PALETTE.len()].filled(),
                    ))
                    .map_err(drawing_error)?;
                legend_area
                    .draw(&Text::new(
                        name.clone(),
                        (x + 20, 37),
                        (FONT, LABEL_SIZE).into_font().color(&BLACK),
                    ))
                    .map_err(drawing_error)?;
                x += 40 + name.chars().count() as i32 * 7;
            }
        }
        let mut plot = ChartBuilder::on(&plot_area)
            .margin(10)
            .margin_top(0)
            .x_label_area_size(44)
            .y_label_area_size(label_width_px)
            .build_cartesian_2d(x_range, (0..count.max(1)).into_segmented())
            .map_err(drawing_error)?;
        // segment 0 is at the bottom: the first row is drawn in the top segment
        let label_of = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) if *i < count => labels[(count - 1 - i) as usize].clone(),
            _ => String::new(),
        };
        plot.configure_mesh()
            .disable_y_mesh()
            .y_labels(count.max(1) as usize)
            .y_label_formatter(&label_of)
            .x_label_formatter(&|v| short_number(*v))
            .x_desc(&chart.x_label)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, LABEL_SIZE))
            .light_line_style(RGBColor(236, 236, 236))
            .bold_line_style(RGBColor(210, 210, 210))
            .draw()
            .map_err(drawing_error)?;
        // the bars of a row share its height, less 4 px above and below
        let row_edge = |i| plot.backend_coord(&(0.0, SegmentValue::Exact(i))).1;
        let segment_px = (row_edge(0) - row_edge(1)).unsigned_abs();
        let bar_px = (segment_px.saturating_sub(8) / per_row).max(2);
        let mut bars = Vec::new();
        for (i, (_, values)) in chart.rows.iter().enumerate() {
            let segment = count - 1 - i as u32;
            for (j, value) in values.iter().enumerate() {
                let Some(value) = value else { continue };
                // a zero is drawn as a sliver, so that it reads as 0 rather than as missing
                let value = if *value == 0.0 { sliver } else { *value };
                let mut bar = Rectangle::new(
                    [
                        (0.0_f64.min(value), SegmentValue::Exact(segment)),
                        (0.0_f64.max(value), SegmentValue::Exact(segment + 1)),
                    ],
                    PALETTE[j % PALETTE.len()].filled(),
                );
                // the row's bars stacked top to bottom in series order
                let top = 4 + bar_px * j as u32;
                let bottom = segment_px.saturating_sub(top + bar_px - 1);
                bar.set_margin(top, bottom, 0, 0);
                bars.push(bar);
            }
        }
        plot.draw_series(bars).map_err(drawing_error)?;
        if let Some(reference) = chart.reference {
            plot.draw_series(DashedLineSeries::new(
                [
                    (reference, SegmentValue::Exact(0)),
                    (reference, SegmentValue::Exact(count.max(1))),
                ],
                6,
                4,
                PALETTE[3].stroke_width(2),
            ))
            .map_err(drawing_error)?;
        }
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_keep_three_figures() {
        assert_eq!(short_number(1_500_000.0), "1.5M");
        assert_eq!(short_number(32_000.0), "32k");
        assert_eq!(short_number(12.0), "12");
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(-2.5e9), "-2.5G");
    }

    #[test]
    fn a_zero_bar_is_visible_and_a_missing_one_is_not() {
        let chart = BarChart {
            title: "t".into(),
            x_label: "x".into(),
            series: vec!["published".into(), "simulated".into()],
            rows: vec![
                ("a".into(), vec![Some(0.0), None]),
                ("b".into(), vec![Some(10.0), Some(5.0)]),
            ],
            reference: None,
        };
        let svg = bar_chart_svg(&chart).unwrap();
        let widths = |fill: &str| -> Vec<i64> {
            svg.lines()
                .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{fill}\"")))
                .filter(|l| !l.contains("width=\"14\"")) // the legend's swatch
                .map(|l| {
                    let w = &l[l.find("width=\"").unwrap() + 7..];
                    w[..w.find('"').unwrap()].parse().unwrap()
                })
                .collect()
        };
        let (blue, orange) = (widths("#1F77B4"), widths("#FF7F0E"));
        assert_eq!(blue.len(), 2, "{svg}");
        assert!(blue.iter().all(|&w| w >= 1), "{blue:?}");
        assert_eq!(orange.len(), 1, "row a has no simulated bar: {orange:?}");
        // 5 is half of 10
        assert!((orange[0] * 2 - blue[1]).abs() <= 2, "{blue:?} {orange:?}");
    }

    #[test]
    fn thinning_keeps_spikes_and_the_end() {
        let mut points: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        points[5_003].1 = 99.0;
        points[9_999].1 = 2.0;
        let thinned = thin(&points);
        assert!(
            thinned.len() <= MAX_POINTS_PER_LINE + 1,
            "{}",
            thinned.len()
        );
        assert!(thinned.contains(&(5_003.0, 99.0)));
        assert_eq!(thinned.last(), Some(&(9_999.0, 2.0)));
        assert!(
            thinned.windows(2).all(|w| w[0].0 < w[1].0),
            "time order kept"
        );
    }
}
