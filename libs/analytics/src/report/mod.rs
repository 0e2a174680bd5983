//! `basra analytics report`: one self-contained HTML page (inline SVG charts, inline CSS,
//! no script, no external resource) from a Parquet export, so it works on an export
//! from anywhere.
//!
//! - [`aggregate`]: the figures, read one day partition at a time.
//! - [`charts`]: the SVG charts (`plotters`).

pub mod aggregate;
pub mod charts;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use self::aggregate::{Figures, MODES, RETENTION_DAYS, WinRate};
use self::charts::Series;

/// What a report run did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReportSummary {
    /// Matches read.
    pub matches: u64,
    /// Plays read.
    pub plays: u64,
    /// Plots drawn.
    pub plots: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// One section: a title, a sentence, a chart and a short table.
struct Section {
    id: &'static str,
    title: &'static str,
    note: String,
    svg: String,
    points: usize,
    table: Table,
}

struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// Reads the export at `from` and writes the report to `out`.
pub fn report(from: &Path, out: &Path) -> anyhow::Result<ReportSummary> {
    let started = Instant::now();
    let figures = aggregate::figures(from)?;
    anyhow::ensure!(
        figures.matches > 0,
        "{} holds no matches: run `basra analytics export` first",
        from.display()
    );
    let sections = vec![
        activity(&figures)?,
        length_rounds(&figures)?,
        length_minutes(&figures)?,
        first_seat(&figures)?,
        basras(&figures)?,
        majority(&figures)?,
        rating_distribution(&figures)?,
        rating_gap(&figures)?,
        people_vs_bots(&figures)?,
        automatic(&figures)?,
        retention(&figures)?,
        time_to_match(&figures)?,
    ];
    let html = page(&figures, &sections);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(out, html)?;
    Ok(ReportSummary {
        matches: figures.matches,
        plays: figures.plays,
        plots: sections.len(),
        elapsed: started.elapsed(),
    })
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn activity(f: &Figures) -> anyhow::Result<Section> {
    let days: Vec<String> = f
        .per_day
        .keys()
        .map(|d| d.format("%m-%d").to_string())
        .collect();
    let series: Vec<Series> = MODES
        .iter()
        .enumerate()
        .map(|(k, mode)| Series {
            name: (*mode).to_owned(),
            values: f.per_day.values().map(|v| v[k] as f64).collect(),
        })
        .collect();
    let mut table = Table::new(&["mode", "matches", "share", "per day (mean)"]);
    let total = f.matches.max(1) as f64;
    for (k, mode) in MODES.iter().enumerate() {
        let n: u64 = f.per_day.values().map(|v| v[k]).sum();
        table.row(vec![
            (*mode).to_owned(),
            n.to_string(),
            pct(n as f64 / total),
            format!("{:.1}", n as f64 / f.per_day.len().max(1) as f64),
        ]);
    }
    Ok(Section {
        id: "activity",
        title: "Matches per day and per mode",
        note: format!(
            "{} matches over {} days (UTC, by end of match).",
            f.matches,
            f.per_day.len()
        ),
        svg: charts::bars(&days, &series, true, "matches")?,
        points: f.per_day.len(),
        table,
    })
}

fn quantiles(h: &std::collections::BTreeMap<impl Copy + Into<i64>, u64>) -> (f64, i64, i64, i64) {
    let n: u64 = h.values().sum();
    let mean = h
        .iter()
        .map(|(k, v)| (*k).into() as f64 * *v as f64)
        .sum::<f64>()
        / n.max(1) as f64;
    let at = |q: f64| {
        let target = (q * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (k, v) in h {
            seen += v;
            if seen >= target {
                return (*k).into();
            }
        }
        0
    };
    (mean, at(0.5), at(0.9), at(1.0))
}

fn histogram_series(
    h: &std::collections::BTreeMap<impl Copy + Into<i64>, u64>,
    name: &str,
) -> (Vec<String>, Vec<Series>) {
    let (lo, hi) = match (h.keys().next(), h.keys().last()) {
        (Some(a), Some(b)) => ((*a).into(), (*b).into()),
        _ => (0, 0),
    };
    let keys: Vec<i64> = (lo..=hi).collect();
    let counts: std::collections::HashMap<i64, u64> =
        h.iter().map(|(k, v)| ((*k).into(), *v)).collect();
    (
        keys.iter().map(|k| k.to_string()).collect(),
        vec![Series {
            name: name.to_owned(),
            values: keys
                .iter()
                .map(|k| counts.get(k).copied().unwrap_or(0) as f64)
                .collect(),
        }],
    )
}

fn summary_table(h: &std::collections::BTreeMap<impl Copy + Into<i64>, u64>, unit: &str) -> Table {
    let (mean, median, p90, max) = quantiles(h);
    let mut table = Table::new(&["mean", "median", "90th percentile", "longest"]);
    table.row(vec![
        format!("{mean:.2} {unit}"),
        format!("{median} {unit}"),
        format!("{p90} {unit}"),
        format!("{max} {unit}"),
    ]);
    table
}

fn length_rounds(f: &Figures) -> anyhow::Result<Section> {
    let (categories, series) = histogram_series(&f.rounds, "matches");
    Ok(Section {
        id: "length-rounds",
        title: "Match length in rounds",
        note: "Completed rounds per match (a resigned or abandoned match stops mid-round).".into(),
        svg: charts::bars(&categories, &series, false, "matches")?,
        points: f.rounds.len(),
        table: summary_table(&f.rounds, "rounds"),
    })
}

fn length_minutes(f: &Figures) -> anyhow::Result<Section> {
    let (categories, series) = histogram_series(&f.minutes, "matches");
    Ok(Section {
        id: "length-minutes",
        title: "Match length in minutes",
        note: "From the first deal to the end of the match, in whole minutes.".into(),
        svg: charts::bars(&categories, &series, false, "matches")?,
        points: f.minutes.len(),
        table: summary_table(&f.minutes, "min"),
    })
}

fn first_seat(f: &Figures) -> anyhow::Result<Section> {
    let mut categories = Vec::new();
    let mut rates = Vec::new();
    let mut table = Table::new(&["seats", "matches", "first side wins", "95 % interval"]);
    let mut all = WinRate::default();
    for (seats, rate) in &f.first_side {
        all.n += rate.n;
        all.wins += rate.wins;
        if let Some(r) = rate.with_interval() {
            categories.push(format!("{seats} seats"));
            rates.push(r);
            table.row(vec![
                seats.to_string(),
                rate.n.to_string(),
                pct(r.0),
                format!("{} – {}", pct(r.1), pct(r.2)),
            ]);
        }
    }
    if let Some(r) = all.with_interval() {
        categories.push("all".into());
        rates.push(r);
        table.row(vec![
            "all".into(),
            all.n.to_string(),
            pct(r.0),
            format!("{} – {}", pct(r.1), pct(r.2)),
        ]);
    }
    Ok(Section {
        id: "first-seat",
        title: "First-seat advantage",
        note: "Win rate of the side that plays first (side 0, seat 0 leads round 1) in matches won on the board, with 95 % Wilson intervals; the line is 50 %.".into(),
        svg: charts::rates_with_intervals(&categories, &rates, 0.5, "win rate")?,
        points: rates.len(),
        table,
    })
}

fn basras(f: &Figures) -> anyhow::Result<Section> {
    let rounds = f.scored_rounds.max(1) as f64;
    let kinds = ["Basra", "Jack Basra", "Komi Basra"];
    let per_round: Vec<f64> = f.basras.iter().map(|&b| b as f64 / rounds).collect();
    let mut table = Table::new(&["kind", "total", "per round", "rounds per one"]);
    for (k, kind) in kinds.iter().enumerate() {
        table.row(vec![
            (*kind).to_owned(),
            f.basras[k].to_string(),
            format!("{:.3}", per_round[k]),
            if f.basras[k] > 0 {
                format!("{:.1}", rounds / f.basras[k] as f64)
            } else {
                "–".into()
            },
        ]);
    }
    Ok(Section {
        id: "basras",
        title: "Basras per round by kind",
        note: format!(
            "Over {} scored rounds, both sides together.",
            f.scored_rounds
        ),
        svg: charts::bars(
            &kinds.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>(),
            &[Series {
                name: "per round".into(),
                values: per_round,
            }],
            false,
            "per round",
        )?,
        points: 3,
        table,
    })
}

fn majority(f: &Figures) -> anyhow::Result<Section> {
    let mut categories = Vec::new();
    let mut shares = Vec::new();
    let mut table = Table::new(&[
        "target",
        "matches won on the board",
        "decided by the majority bonus",
        "share",
    ]);
    let (mut n, mut d) = (0, 0);
    for (target, &(all, decided)) in &f.majority_decides {
        n += all;
        d += decided;
        categories.push(format!("to {target}"));
        shares.push(decided as f64 / all.max(1) as f64);
        table.row(vec![
            target.to_string(),
            all.to_string(),
            decided.to_string(),
            pct(decided as f64 / all.max(1) as f64),
        ]);
    }
    table.row(vec![
        "all".into(),
        n.to_string(),
        d.to_string(),
        pct(d as f64 / n.max(1) as f64),
    ]);
    Ok(Section {
        id: "majority",
        title: "How often the majority bonus decides a match",
        note: "A match is decided by the bonus when, without every majority award of the match, the winner would not have been ahead.".into(),
        svg: charts::bars(&categories, &[Series { name: "share".into(), values: shares }], false, "share of matches")?,
        points: categories.len(),
        table,
    })
}

fn rating_distribution(f: &Figures) -> anyhow::Result<Section> {
    let mut buckets: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    let mut ratings: Vec<f64> = f.latest_rating.values().map(|&(_, r)| r).collect();
    ratings.sort_by(f64::total_cmp);
    for r in &ratings {
        *buckets.entry((r / 50.0).floor() as i64 * 50).or_default() += 1;
    }
    let (categories, series) = match (buckets.keys().next(), buckets.keys().last()) {
        (Some(&lo), Some(&hi)) => {
            let keys: Vec<i64> = (lo..=hi).step_by(50).collect();
            (
                keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
                vec![Series {
                    name: "players".into(),
                    values: keys
                        .iter()
                        .map(|k| buckets.get(k).copied().unwrap_or(0) as f64)
                        .collect(),
                }],
            )
        }
        _ => (
            Vec::new(),
            vec![Series {
                name: "players".into(),
                values: Vec::new(),
            }],
        ),
    };
    let at = |q: f64| {
        ratings
            .get(((q * ratings.len() as f64) as usize).min(ratings.len().saturating_sub(1)))
            .map_or("–".to_owned(), |r| format!("{r:.0}"))
    };
    let mut table = Table::new(&[
        "rated players",
        "10th percentile",
        "median",
        "90th percentile",
    ]);
    table.row(vec![ratings.len().to_string(), at(0.1), at(0.5), at(0.9)]);
    Ok(Section {
        id: "ratings",
        title: "Rating distribution",
        note: "Each rated player's latest Glicko-2 rating in the export, in buckets of 50.".into(),
        svg: charts::bars(&categories, &series, false, "players")?,
        points: ratings.len(),
        table,
    })
}

fn rating_gap(f: &Figures) -> anyhow::Result<Section> {
    let means: Vec<(f64, f64)> = f
        .gap_buckets
        .iter()
        .filter(|(_, (_, n))| *n >= 5)
        .map(|(&gap, &(sum, n))| (gap as f64, sum / n as f64))
        .collect();
    let mut table = Table::new(&["rating gap (own − opponents)", "rated seats", "mean change"]);
    for (&gap, &(sum, n)) in &f.gap_buckets {
        if n >= 5 {
            table.row(vec![
                format!("{gap:+}"),
                n.to_string(),
                format!("{:+.1}", sum / n as f64),
            ]);
        }
    }
    Ok(Section {
        id: "rating-gap",
        title: "Rating change against the rating gap",
        note: format!(
            "Each dot is a rated seat (a sample of {} of {}); the line is the mean change per 100-point gap bucket.",
            f.gap_change.len(),
            f.rated_seats
        ),
        svg: charts::scatter_with_means(
            &f.gap_change,
            &means,
            "rating gap before the match",
            "rating change",
        )?,
        points: f.gap_change.len(),
        table,
    })
}

fn people_vs_bots(f: &Figures) -> anyhow::Result<Section> {
    let names = ["people", "bots"];
    let mut categories = Vec::new();
    let mut rates = Vec::new();
    let mut table = Table::new(&[
        "seats of",
        "seats in decided mixed matches",
        "win rate",
        "95 % interval",
    ]);
    for (k, name) in names.iter().enumerate() {
        if let Some(r) = f.people_vs_bots[k].with_interval() {
            categories.push((*name).to_owned());
            rates.push(r);
            table.row(vec![
                (*name).to_owned(),
                f.people_vs_bots[k].n.to_string(),
                pct(r.0),
                format!("{} – {}", pct(r.1), pct(r.2)),
            ]);
        }
    }
    Ok(Section {
        id: "bots",
        title: "Bots against people",
        note: "Win rate of people's and bots' seats in decided matches where both sat.".into(),
        svg: charts::rates_with_intervals(&categories, &rates, 0.5, "win rate")?,
        points: rates.len(),
        table,
    })
}

fn automatic(f: &Figures) -> anyhow::Result<Section> {
    let (categories, series) = histogram_series(&f.automatic, "matches");
    let (mean, median, p90, max) = quantiles(&f.automatic);
    let with_any: u64 = f
        .automatic
        .iter()
        .filter(|(k, _)| **k > 0)
        .map(|(_, v)| v)
        .sum();
    let mut table = Table::new(&[
        "mean per match",
        "median",
        "90th percentile",
        "most",
        "matches with any",
    ]);
    table.row(vec![
        format!("{mean:.2}"),
        median.to_string(),
        p90.to_string(),
        max.to_string(),
        pct(with_any as f64 / f.matches.max(1) as f64),
    ]);
    Ok(Section {
        id: "automatic",
        title: "Timed-out (automatic) plays per match",
        note: "Plays the server made when a turn timer ran out.".into(),
        svg: charts::bars(&categories, &series, false, "matches")?,
        points: f.automatic.len(),
        table,
    })
}

fn retention(f: &Figures) -> anyhow::Result<Section> {
    let rows: Vec<String> = f
        .cohorts
        .keys()
        .map(|d| d.format("%m-%d").to_string())
        .collect();
    // D0 to the furthest day a cohort reaches (at most RETENTION_DAYS).
    let reach = f
        .cohorts
        .values()
        .map(|c| c.returned.len())
        .max()
        .unwrap_or(1)
        .min(RETENTION_DAYS + 1);
    let columns: Vec<String> = (0..reach).map(|k| format!("D{k}")).collect();
    let cells: Vec<Vec<Option<f64>>> = f
        .cohorts
        .values()
        .map(|c| {
            (0..reach)
                .map(|k| {
                    c.returned
                        .get(k)
                        .map(|&n| n as f64 / c.players.max(1) as f64)
                })
                .collect()
        })
        .collect();
    let mut table = Table::new(&[
        "day after the first",
        "cohorts reaching it",
        "players",
        "played that day",
    ]);
    for k in [1, 7, 30] {
        let reaching: Vec<_> = f
            .cohorts
            .values()
            .filter(|c| c.returned.len() > k)
            .collect();
        let players: u64 = reaching.iter().map(|c| c.players).sum();
        let back: u64 = reaching.iter().map(|c| c.returned[k]).sum();
        table.row(vec![
            format!("D{k}"),
            reaching.len().to_string(),
            players.to_string(),
            if players > 0 {
                pct(back as f64 / players as f64)
            } else {
                "–".into()
            },
        ]);
    }
    let players: u64 = f.cohorts.values().map(|c| c.players).sum();
    Ok(Section {
        id: "retention",
        title: "Retention by cohort",
        note: format!(
            "{players} players by the UTC day they were first seen (sign-up, or first match when older; one row a day); a cell is the share of the row's players who played a match k days later (darker: more). Days the export does not reach yet are blank."
        ),
        svg: charts::heatmap(&rows, &columns, &cells, "days after the first")?,
        points: cells.iter().flatten().filter(|c| c.is_some()).count(),
        table,
    })
}

/// The median of a histogram (value → count), if it holds any.
fn median(h: &std::collections::BTreeMap<u32, u64>) -> Option<u32> {
    let n: u64 = h.values().sum();
    let mut seen = 0;
    for (value, count) in h {
        seen += count;
        if seen * 2 >= n && n > 0 {
            return Some(*value);
        }
    }
    None
}

fn time_to_match(f: &Figures) -> anyhow::Result<Section> {
    let hours: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let queued = |k: usize| -> u64 { f.queue_waits[k].iter().flat_map(|h| h.values()).sum() };
    let modes: Vec<usize> = (0..MODES.len()).filter(|&k| queued(k) > 0).collect();
    let series: Vec<Series> = modes
        .iter()
        .map(|&k| Series {
            name: MODES[k].to_owned(),
            values: f.queue_waits[k]
                .iter()
                .map(|h| median(h).map_or(0.0, f64::from))
                .collect(),
        })
        .collect();
    let mut table = Table::new(&[
        "mode",
        "queued seats",
        "median wait",
        "90th percentile",
        "longest",
    ]);
    for &k in &modes {
        let mut all = std::collections::BTreeMap::new();
        for h in &f.queue_waits[k] {
            for (wait, n) in h {
                *all.entry(i64::from(*wait)).or_insert(0) += n;
            }
        }
        let (_, median, p90, max) = quantiles(&all);
        table.row(vec![
            MODES[k].to_owned(),
            queued(k).to_string(),
            format!("{median} s"),
            format!("{p90} s"),
            format!("{max} s"),
        ]);
    }
    Ok(Section {
        id: "time-to-match",
        title: "Time to match by hour",
        note: "Median seconds a queued player searched before the queue matched them, by UTC hour of the match's start and mode (queue seats only).".into(),
        svg: charts::bars(&hours, &series, false, "median wait (s)")?,
        points: series.iter().flat_map(|s| &s.values).filter(|v| **v > 0.0).count(),
        table,
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn page(f: &Figures, sections: &[Section]) -> String {
    let mut html = String::with_capacity(1 << 20);
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Basra online — match report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 800px; color: #222; }}
h1 {{ font-size: 1.6rem; }} h2 {{ font-size: 1.2rem; margin-top: 2.5rem; }}
figure.plot {{ margin: 0.5rem 0; }} figure.plot svg {{ width: 100%; height: auto; }}
table {{ border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }}
th {{ background: #f3f3f3; }} p.note {{ color: #555; font-size: 0.9rem; }}
nav a {{ margin-right: 0.8rem; font-size: 0.85rem; }}
</style></head><body>
<h1>Basra online — match report</h1>
<p>{} matches, {} plays, {} days.</p>
<nav>"#,
        f.matches,
        f.plays,
        f.per_day.len()
    );
    for s in sections {
        let _ = write!(html, r##"<a href="#{}">{}</a>"##, s.id, escape(s.title));
    }
    html.push_str("</nav>\n");
    for s in sections {
        let _ = write!(
            html,
            r#"<section id="{}"><h2>{}</h2><p class="note">{}</p><figure class="plot" data-points="{}">{}</figure><table><thead><tr>"#,
            s.id,
            escape(s.title),
            escape(&s.note),
            s.points,
            strip_xml_declaration(&s.svg)
        );
        for h in &s.table.head {
            let _ = write!(html, "<th>{}</th>", escape(h));
        }
        html.push_str("</tr></thead><tbody>");
        for row in &s.table.rows {
            html.push_str("<tr>");
            for cell in row {
                let _ = write!(html, "<td>{}</td>", escape(cell));
            }
            html.push_str("</tr>");
        }
        html.push_str("</tbody></table></section>\n");
    }
    html.push_str("</body></html>\n");
    html
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(at) => &svg[at..],
        None => svg,
    }
}
