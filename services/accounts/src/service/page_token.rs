//! The page tokens of the Leaderboard, MatchHistory and ListNotices: the last row's sort key, written
//! as text the client hands back unchanged. A token that does not parse is refused as
//! one no response gave, whatever is wrong with it.

use uuid::Uuid;

use crate::domain;
use crate::error::{AccountsError, Result};
use crate::store::{HistoryCursor, LeaderboardCursor};

fn bad_page_token() -> AccountsError {
    AccountsError::invalid(
        "page_token",
        "is not a next_page_token from a previous response",
    )
}

/// `lb1.<rank of the last row>.<rating bits>.<ranked matches>.<user id>`.
pub(super) fn encode_leaderboard_token(rank: u32, c: &LeaderboardCursor) -> String {
    format!(
        "lb1.{rank}.{:016x}.{}.{}",
        c.rating.to_bits(),
        c.ranked_matches,
        c.user_id.simple()
    )
}

pub(super) fn decode_leaderboard_token(token: &str) -> Result<(u32, LeaderboardCursor)> {
    let mut parts = token.split('.');
    let (Some("lb1"), Some(rank), Some(bits), Some(ranked), Some(user), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(bad_page_token());
    };
    let rating = f64::from_bits(u64::from_str_radix(bits, 16).map_err(|_| bad_page_token())?);
    if !rating.is_finite() {
        return Err(bad_page_token());
    }
    Ok((
        rank.parse().map_err(|_| bad_page_token())?,
        LeaderboardCursor {
            rating,
            ranked_matches: ranked.parse().map_err(|_| bad_page_token())?,
            user_id: Uuid::parse_str(user).map_err(|_| bad_page_token())?,
        },
    ))
}

/// `mh1.<ended_at in µs>.<match id>` (the match id last: it may hold dots).
pub(super) fn encode_history_token(c: &HistoryCursor) -> String {
    format!("mh1.{}.{}", c.ended_at.timestamp_micros(), c.match_id)
}

pub(super) fn decode_history_token(token: &str) -> Result<HistoryCursor> {
    let mut parts = token.splitn(3, '.');
    let (Some("mh1"), Some(micros), Some(match_id)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_page_token());
    };
    let ended_at = micros
        .parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .ok_or_else(bad_page_token)?;
    let match_id = domain::parse_opaque_id("page_token", match_id).map_err(|_| bad_page_token())?;
    Ok(HistoryCursor { ended_at, match_id })
}

/// `nt1.<the last notice's id>` (ListNotices: the next page holds smaller ids).
pub(super) fn encode_notice_token(id: u64) -> String {
    format!("nt1.{id}")
}

pub(super) fn decode_notice_token(token: &str) -> Result<u64> {
    token
        .strip_prefix("nt1.")
        .and_then(|id| id.parse::<u64>().ok())
        .filter(|id| *id > 0)
        .ok_or_else(bad_page_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_and_reject_garbage() {
        let c = LeaderboardCursor {
            rating: 1612.25,
            ranked_matches: 7,
            user_id: Uuid::now_v7(),
        };
        let t = encode_leaderboard_token(50, &c);
        assert_eq!(decode_leaderboard_token(&t).unwrap(), (50, c));
        for bad in ["", "lb1", "lb1.1.2.3", "lb2.1.0.1.x", &format!("{t}.x")] {
            assert!(decode_leaderboard_token(bad).is_err(), "{bad}");
        }
        let h = HistoryCursor {
            ended_at: domain::now(),
            match_id: "m.1-2".into(),
        };
        assert_eq!(decode_history_token(&encode_history_token(&h)).unwrap(), h);
        assert!(decode_history_token("mh1.x.y").is_err());
        assert!(decode_history_token("mh1.1.").is_err());
        assert_eq!(decode_notice_token(&encode_notice_token(42)).unwrap(), 42);
        for bad in ["", "nt1.", "nt1.0", "nt1.-1", "nt2.5", "nt1.5.6"] {
            assert!(decode_notice_token(bad).is_err(), "{bad}");
        }
    }
}
