//! `basra profile`, `basra leaderboard [--season ID]` and `basra seasons`: the player's
//! rating with its tier and their best season finish, a season's leaderboard (the current
//! one live, a finished one as it was kept at its end), and the rating seasons
//! (`ListSeasons`). What is printed is made by the pure functions here
//! ([`profile_text`], [`leaderboard_text`], [`seasons_text`]).

use basra_proto::basra::accounts::v1::{
    GetProfileRequest, LeaderboardEntry, LeaderboardRequest, LeaderboardResponse,
    ListSeasonsRequest, ListSeasonsResponse, Profile, Season,
};

use crate::render::isolate;
use crate::session::Session;

/// The most leaderboard rows a page may hold (the server's limit).
pub const MOST_ROWS: u32 = 100;

/// Prints the signed-in player's profile.
pub async fn profile(session: &Session) -> anyhow::Result<()> {
    let answer = session
        .with_refresh(|| async {
            session
                .accounts()
                .get_profile(GetProfileRequest::default())
                .await
        })
        .await?
        .into_inner();
    let profile = answer
        .profile
        .ok_or_else(|| anyhow::anyhow!("the server answered no profile"))?;
    print!("{}", profile_text(&profile));
    Ok(())
}

/// Prints the first `rows` of `season`'s leaderboard (the current season's when empty).
pub async fn leaderboard(session: &Session, season: &str, rows: u32) -> anyhow::Result<()> {
    let request = LeaderboardRequest {
        page_size: rows.clamp(1, MOST_ROWS),
        page_token: String::new(),
        season_id: season.to_owned(),
    };
    let answer = session
        .with_refresh(|| {
            let request = request.clone();
            async move { session.accounts().leaderboard(request).await }
        })
        .await
        .map_err(|status| match status.code() {
            tonic::Code::NotFound => {
                anyhow::anyhow!("no season {season:?} has started: `basra seasons` lists them")
            }
            _ => anyhow::anyhow!("{}", status.message()),
        })?
        .into_inner();
    print!("{}", leaderboard_text(&answer, &session.user_id));
    Ok(())
}

/// Prints the seasons.
pub async fn seasons(session: &Session) -> anyhow::Result<()> {
    let answer = session
        .with_refresh(|| async { session.accounts().list_seasons(ListSeasonsRequest {}).await })
        .await?
        .into_inner();
    print!("{}", seasons_text(&answer));
    Ok(())
}

/// A rating as shown: whole points.
fn points(rating: f64) -> i64 {
    rating.round() as i64
}

/// ", Gold" when the server names a tier, else nothing.
fn tier_part(tier: &str) -> String {
    if tier.is_empty() {
        String::new()
    } else {
        format!(", {tier}")
    }
}

/// The profile: name, rating with its tier and season, record, place on the current
/// leaderboard, best season finish.
pub fn profile_text(profile: &Profile) -> String {
    let mut text = isolate(&profile.display_name);
    if profile.is_guest {
        text.push_str(" (guest: not listed on leaderboards)");
    } else if !profile.username.is_empty() {
        text.push_str(&format!(" (@{})", profile.username));
    }
    text.push('\n');
    text.push_str(&format!(
        "rating {} ± {}{}",
        points(profile.rating),
        points(profile.rating_deviation),
        tier_part(&profile.tier)
    ));
    if !profile.season_id.is_empty() {
        text.push_str(&format!(" (season {})", profile.season_id));
    }
    text.push('\n');
    text.push_str(&format!(
        "{} matches: {} won, {} lost; {} ranked\n",
        profile.matches_played, profile.wins, profile.losses, profile.ranked_matches
    ));
    match profile.leaderboard_rank {
        Some(rank) => text.push_str(&format!("leaderboard: #{rank}\n")),
        None => text.push_str("leaderboard: not listed\n"),
    }
    match &profile.best_season_finish {
        Some(best) => text.push_str(&format!(
            "best season finish: #{} in {} ({}{})\n",
            best.rank,
            season_label(&best.season_name, &best.season_id),
            points(best.rating),
            tier_part(&best.tier)
        )),
        None => text.push_str("best season finish: none yet\n"),
    }
    text
}

/// "Autumn 2026 (2026-q4)", or the id alone when the season has no name.
fn season_label(name: &str, id: &str) -> String {
    if name.is_empty() || name == id {
        id.to_owned()
    } else {
        format!("{name} ({id})")
    }
}

/// One leaderboard row.
fn entry_line(entry: &LeaderboardEntry, me: &str) -> String {
    let you = if entry.user_id == me { "  ← you" } else { "" };
    format!(
        "{:>4}. {}  {}{}  ({} ranked){you}\n",
        entry.rank,
        isolate(&entry.display_name),
        points(entry.rating),
        tier_part(&entry.tier),
        entry.ranked_matches
    )
}

/// The leaderboard: which season (live or final), the rows, and the caller's own row when
/// it is not among them.
pub fn leaderboard_text(answer: &LeaderboardResponse, me: &str) -> String {
    let mut text = match &answer.season {
        Some(season) if season.current => format!(
            "leaderboard of {}, the current season:\n",
            season_label(&season.name, &season.id)
        ),
        Some(season) => format!(
            "final leaderboard of {} (finished {}):\n",
            season_label(&season.name, &season.id),
            day(season.ends_at.as_ref())
        ),
        None => "leaderboard:\n".to_owned(),
    };
    if answer.entries.is_empty() {
        text.push_str("  nobody is ranked in this season\n");
    }
    for entry in &answer.entries {
        text.push_str(&entry_line(entry, me));
    }
    if let Some(caller) = &answer.caller
        && !answer.entries.iter().any(|e| e.user_id == caller.user_id)
    {
        text.push_str("   …\n");
        text.push_str(&entry_line(caller, me));
    }
    text
}

/// The day of a time (UTC), or "?" when there is none.
fn day(time: Option<&prost_types::Timestamp>) -> String {
    time.and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
        .map_or_else(|| "?".to_owned(), |t| t.format("%Y-%m-%d").to_string())
}

/// One season: id, name, its days, and whether it is running or finished.
fn season_line(season: &Season) -> String {
    let until = match &season.ends_at {
        Some(end) => day(Some(end)),
        None => "…".to_owned(),
    };
    let state = if season.current {
        "current"
    } else {
        "finished: its final leaderboard is kept"
    };
    format!(
        "{}  {}  {} – {}  ({state})\n",
        season.id,
        season.name,
        day(season.starts_at.as_ref()),
        until
    )
}

/// The seasons that have started (newest first) and the next one.
pub fn seasons_text(answer: &ListSeasonsResponse) -> String {
    if answer.seasons.is_empty() && answer.next.is_none() {
        return "the server sets no rating seasons\n".to_owned();
    }
    let mut text = String::new();
    if answer.seasons.is_empty() {
        text.push_str("no season has started yet\n");
    }
    for season in &answer.seasons {
        text.push_str(&season_line(season));
    }
    if let Some(next) = &answer.next {
        text.push_str(&format!(
            "next: {}  {} from {}\n",
            next.id,
            next.name,
            day(next.starts_at.as_ref())
        ));
    }
    if answer.seasons.iter().any(|s| !s.current) {
        text.push_str("a finished season's leaderboard: basra leaderboard --season ID\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use basra_proto::basra::accounts::v1::SeasonFinish;

    fn ts(rfc3339: &str) -> Option<prost_types::Timestamp> {
        let t = chrono::DateTime::parse_from_rfc3339(rfc3339).unwrap();
        Some(prost_types::Timestamp {
            seconds: t.timestamp(),
            nanos: 0,
        })
    }

    fn season(id: &str, name: &str, start: &str, end: Option<&str>, current: bool) -> Season {
        Season {
            id: id.into(),
            name: name.into(),
            starts_at: ts(start),
            ends_at: end.and_then(ts),
            current,
        }
    }

    fn entry(rank: u32, user: &str, name: &str, rating: f64, tier: &str) -> LeaderboardEntry {
        LeaderboardEntry {
            rank,
            user_id: user.into(),
            display_name: name.into(),
            rating,
            ranked_matches: 4,
            tier: tier.into(),
        }
    }

    #[test]
    fn the_profile_shows_the_tier_and_the_best_season_finish() {
        let mut profile = Profile {
            display_name: "Layla".into(),
            username: "layla".into(),
            rating: 1611.6,
            rating_deviation: 80.2,
            ranked_matches: 4,
            matches_played: 5,
            wins: 3,
            losses: 2,
            leaderboard_rank: Some(2),
            tier: "Gold".into(),
            season_id: "2027-q1".into(),
            best_season_finish: Some(SeasonFinish {
                season_id: "2026-q4".into(),
                season_name: "Autumn 2026".into(),
                rank: 1,
                rating: 1722.4,
                tier: "Platinum".into(),
            }),
            ..Profile::default()
        };
        let text = profile_text(&profile);
        assert!(text.contains("(@layla)"), "{text}");
        assert!(
            text.contains("rating 1612 ± 80, Gold (season 2027-q1)"),
            "{text}"
        );
        assert!(
            text.contains("5 matches: 3 won, 2 lost; 4 ranked"),
            "{text}"
        );
        assert!(text.contains("leaderboard: #2"), "{text}");
        assert!(
            text.contains("best season finish: #1 in Autumn 2026 (2026-q4) (1722, Platinum)"),
            "{text}"
        );

        // No finish, no tier, no season, a guest.
        profile.best_season_finish = None;
        profile.tier.clear();
        profile.season_id.clear();
        profile.leaderboard_rank = None;
        profile.is_guest = true;
        let text = profile_text(&profile);
        assert!(text.contains("(guest: not listed"), "{text}");
        assert!(text.contains("rating 1612 ± 80\n"), "{text}");
        assert!(text.contains("leaderboard: not listed"), "{text}");
        assert!(text.contains("best season finish: none yet"), "{text}");
    }

    #[test]
    fn a_finished_seasons_leaderboard_says_it_is_final_and_adds_the_callers_row() {
        let answer = LeaderboardResponse {
            entries: vec![
                entry(1, "a", "Amira", 1700.2, "Platinum"),
                entry(2, "b", "Badr", 1600.0, "Gold"),
            ],
            next_page_token: "more".into(),
            caller: Some(entry(7, "me", "Me", 1450.0, "Silver")),
            season: Some(season(
                "s1",
                "Autumn",
                "2026-10-01T00:00:00Z",
                Some("2027-01-01T00:00:00Z"),
                false,
            )),
        };
        let text = leaderboard_text(&answer, "me");
        assert!(
            text.starts_with("final leaderboard of Autumn (s1) (finished 2027-01-01):\n"),
            "{text}"
        );
        assert!(
            text.contains("   1. \u{2068}Amira\u{2069}  1700, Platinum  (4 ranked)\n"),
            "{text}"
        );
        assert!(
            text.ends_with("   …\n   7. \u{2068}Me\u{2069}  1450, Silver  (4 ranked)  ← you\n"),
            "{text}"
        );

        // The current season, the caller on the page: marked there, not repeated.
        let answer = LeaderboardResponse {
            entries: vec![entry(1, "me", "Me", 1510.0, "")],
            caller: Some(entry(1, "me", "Me", 1510.0, "")),
            season: Some(season("s2", "s2", "2027-01-01T00:00:00Z", None, true)),
            ..LeaderboardResponse::default()
        };
        let text = leaderboard_text(&answer, "me");
        assert_eq!(
            text,
            "leaderboard of s2, the current season:\n   1. \u{2068}Me\u{2069}  1510  (4 ranked)  ← you\n"
        );
        let empty = leaderboard_text(&LeaderboardResponse::default(), "me");
        assert_eq!(empty, "leaderboard:\n  nobody is ranked in this season\n");
    }

    #[test]
    fn the_seasons_are_listed_newest_first_with_the_next_one() {
        let answer = ListSeasonsResponse {
            seasons: vec![
                season(
                    "s2",
                    "Winter",
                    "2027-01-01T00:00:00Z",
                    Some("2027-04-01T00:00:00Z"),
                    true,
                ),
                season(
                    "s1",
                    "Autumn",
                    "2026-10-01T00:00:00Z",
                    Some("2027-01-01T00:00:00Z"),
                    false,
                ),
            ],
            next: Some(season("s3", "Spring", "2027-04-01T00:00:00Z", None, false)),
        };
        assert_eq!(
            seasons_text(&answer),
            "s2  Winter  2027-01-01 – 2027-04-01  (current)\n\
             s1  Autumn  2026-10-01 – 2027-01-01  (finished: its final leaderboard is kept)\n\
             next: s3  Spring from 2027-04-01\n\
             a finished season's leaderboard: basra leaderboard --season ID\n"
        );
        assert_eq!(
            seasons_text(&ListSeasonsResponse::default()),
            "the server sets no rating seasons\n"
        );
        let only_next = ListSeasonsResponse {
            seasons: Vec::new(),
            next: Some(season("s1", "Autumn", "2026-10-01T00:00:00Z", None, false)),
        };
        assert_eq!(
            seasons_text(&only_next),
            "no season has started yet\nnext: s1  Autumn from 2026-10-01\n"
        );
    }
}
