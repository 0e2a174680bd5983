//! SVG charts drawn with `plotters` (SVG backend only, no fonts: text is left to the
//! browser): bars over categories, bars with interval whiskers, a scatter with a line of
//! bucket means, and a heat map of shares.

use plotters::prelude::*;

/// Chart size in pixels.
const SIZE: (u32, u32) = (720, 320);

/// The palette, one colour per series.
pub const PALETTE: [RGBColor; 4] = [
    RGBColor(0x2b, 0x6c, 0xb0),
    RGBColor(0xdd, 0x8a, 0x2e),
    RGBColor(0x3a, 0x9e, 0x5c),
    RGBColor(0xb0, 0x3a, 0x48),
];

/// A named series of values, one per category.
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// One value per category.
    pub values: Vec<f64>,
}

fn draw_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

/// The label of category tick `x`: categories sit at whole numbers, every `step`-th named.
fn label(categories: &[String], x: f64, step: usize) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    let i = i as usize;
    if i.is_multiple_of(step) {
        categories.get(i).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// Bars over `categories`, one colour per series, stacked or side by side.
pub fn bars(
    categories: &[String],
    series: &[Series],
    stacked: bool,
    y_label: &str,
) -> anyhow::Result<String> {
    let n = categories.len().max(1);
    let top = if stacked {
        (0..n)
            .map(|i| {
                series
                    .iter()
                    .map(|s| s.values.get(i).copied().unwrap_or(0.0))
                    .sum::<f64>()
            })
            .fold(0.0, f64::max)
    } else {
        series
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .fold(0.0, f64::max)
    };
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top)
            .map_err(draw_error)?;
        let step = (n / 12).max(1);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(25))
            .x_label_formatter(&|x| label(categories, *x, step))
            .y_desc(y_label)
            .draw()
            .map_err(draw_error)?;
        let width = if stacked {
            0.8
        } else {
            0.8 / series.len().max(1) as f64
        };
        for (k, s) in series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let rects = s.values.iter().enumerate().map(|(i, &v)| {
                let (x0, y0) = if stacked {
                    let below: f64 = series[..k]
                        .iter()
                        .map(|t| t.values.get(i).copied().unwrap_or(0.0))
                        .sum();
                    (i as f64 - 0.4, below)
                } else {
                    (i as f64 - 0.4 + width * k as f64, 0.0)
                };
                Rectangle::new([(x0, y0), (x0 + width, y0 + v)], colour.filled())
            });
            chart
                .draw_series(rects)
                .map_err(draw_error)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled())
                });
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(draw_error)?;
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// Rates with 95 % intervals over `categories`, and a dashed reference line at `reference`.
pub fn rates_with_intervals(
    categories: &[String],
    rates: &[(f64, f64, f64)],
    reference: f64,
    y_label: &str,
) -> anyhow::Result<String> {
    let n = categories.len().max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..1f64)
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&|x| label(categories, *x, 1))
            .y_desc(y_label)
            .draw()
            .map_err(draw_error)?;
        let colour = PALETTE[0];
        chart
            .draw_series(rates.iter().enumerate().map(|(i, &(p, _, _))| {
                Rectangle::new(
                    [(i as f64 - 0.25, 0.0), (i as f64 + 0.25, p)],
                    colour.mix(0.7).filled(),
                )
            }))
            .map_err(draw_error)?;
        chart
            .draw_series(rates.iter().enumerate().map(|(i, &(_, low, high))| {
                let x = i as f64;
                PathElement::new(vec![(x, low), (x, high)], BLACK.stroke_width(2))
            }))
            .map_err(draw_error)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, reference), (n as f64 - 0.5, reference)],
                PALETTE[3].stroke_width(1),
            )))
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// A scatter of `points` with a line through `means` (x, mean y).
pub fn scatter_with_means(
    points: &[(f64, f64)],
    means: &[(f64, f64)],
    x_label: &str,
    y_label: &str,
) -> anyhow::Result<String> {
    let (mut x0, mut x1, mut y0, mut y1) = (-1f64, 1f64, -1f64, 1f64);
    for &(x, y) in points.iter().chain(means) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let pad = |a: f64, b: f64| (b - a) * 0.05;
    let (px, py) = (pad(x0, x1), pad(y0, y1));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d((x0 - px)..(x1 + px), (y0 - py)..(y1 + py))
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(draw_error)?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&(x, y)| Circle::new((x, y), 2, PALETTE[0].mix(0.35).filled())),
            )
            .map_err(draw_error)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                means.to_vec(),
                PALETTE[1].stroke_width(3),
            )))
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// A heat map: one row per `rows` label, one column per `columns` label, each cell's
/// share (0 to 1) as the opacity of the first palette colour; `None` cells are not drawn.
pub fn heatmap(
    rows: &[String],
    columns: &[String],
    cells: &[Vec<Option<f64>>],
    x_label: &str,
) -> anyhow::Result<String> {
    let (n_rows, n_columns) = (rows.len().max(1), columns.len().max(1));
    let height = (n_rows as u32 * 16 + 80).clamp(200, 900);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(
                -0.5f64..n_columns as f64 - 0.5,
                n_rows as f64 - 0.5..-0.5f64,
            )
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(n_columns.min(31))
            .x_label_formatter(&|x| label(columns, *x, (n_columns / 16).max(1)))
            .y_labels(n_rows.min(40))
            .y_label_formatter(&|y| label(rows, *y, (n_rows / 30).max(1)))
            .x_desc(x_label)
            .draw()
            .map_err(draw_error)?;
        let colour = PALETTE[0];
        chart
            .draw_series(cells.iter().enumerate().flat_map(|(r, row)| {
                row.iter().enumerate().filter_map(move |(c, share)| {
                    let share = (*share)?;
                    let (x, y) = (c as f64, r as f64);
                    Some(Rectangle::new(
                        [(x - 0.48, y - 0.48), (x + 0.48, y + 0.48)],
                        colour.mix(0.08 + 0.92 * share.clamp(0.0, 1.0)).filled(),
                    ))
                })
            }))
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}
