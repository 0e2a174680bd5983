//! The JSON form of each part of the export (pure: no store, no clock). What each part
//! holds, and what it leaves out, is the `.proto` comment of ExportMyData.

use basra_engine::analysis::Thresholds;
use basra_platform::client_info::ClientInfo;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::convert::settings_from_pb;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::friends::FriendEntry;
use crate::seasons::Calendar;
use crate::store::pushes::{PushDevice, platform_name};
use crate::store::{KeptAnalysis, PlayedMatch, Report, SeasonFinish, SeasonRating};

/// How many characters of a push token the export shows: its end, enough for the player
/// to tell their devices apart, too few to send anything to the device.
pub(super) const TOKEN_SUFFIX_CHARS: usize = 6;

/// A time as the document writes it (RFC 3339, microseconds, UTC).
pub(super) fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A time of the API's, as [`time`] writes it (`null` when unset or out of range).
fn proto_time(t: Option<&prost_types::Timestamp>) -> Value {
    t.and_then(|t| DateTime::from_timestamp(t.seconds, t.nanos.clamp(0, 999_999_999) as u32))
        .map_or(Value::Null, |t| json!(time(t)))
}

/// A player of the caller's friend lists.
pub(super) fn friend(entry: &FriendEntry) -> Value {
    json!({
        "user_id": entry.user_id,
        "display_name": entry.display_name,
        "is_guest": entry.is_guest,
        "since": time(entry.since),
    })
}

/// A client app (`basra-client`).
pub(super) fn client(c: &ClientInfo) -> Value {
    json!({ "platform": c.platform, "version": c.version })
}

/// One of the caller's matches, whole, with the analysis kept of their plays in it.
pub(super) fn played(
    m: &PlayedMatch,
    analysis: Option<&KeptAnalysis>,
    marks: &Thresholds,
) -> Value {
    let r = &m.record;
    json!({
        "match_id": r.match_id,
        "room_id": r.room_id,
        "ranked": r.ranked,
        "settings": r.settings,
        "seats": r.seats,
        "your_seat": m.your_seat,
        "seed": r.seed.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "actions": r.actions,
        "rounds": r.rounds,
        "final_totals": r.final_totals,
        "basra_counts": r.basra_counts,
        "winner_side": r.winner_side,
        "end_reason": r.end_reason.as_str(),
        "started_at": time(r.started_at),
        "ended_at": time(r.ended_at),
        "allow_spectators": r.allow_spectators,
        "event_id": r.event_id,
        "your_rating_change": m.rating_change.map(|c| json!({
            "rating_before": c.rating_before,
            "rating_after": c.rating_after,
            "deviation_after": c.deviation_after,
        })),
        "your_client": m.your_client.as_ref().map(client),
        "your_analysis": analysis.map(|a| self::analysis(a, marks)),
    })
}

/// The analysis of the caller's plays in a match (GetReplay's), marked by today's
/// thresholds as GetReplay marks it.
fn analysis(a: &KeptAnalysis, marks: &Thresholds) -> Value {
    json!({
        "worlds": a.worlds,
        "plays": a.reviews.iter().map(|r| json!({
            "action": r.action,
            "played": r.played,
            "best": r.best,
            "expected_loss": r.loss,
            "mark": marks.quality(r.loss),
        })).collect::<Vec<_>>(),
    })
}

/// A push device the caller registered: never its token, only the token's last
/// [`TOKEN_SUFFIX_CHARS`] characters.
pub(super) fn push_device(d: &PushDevice) -> Value {
    let chars: Vec<char> = d.token.chars().collect();
    let suffix: String = chars[chars.len().saturating_sub(TOKEN_SUFFIX_CHARS)..]
        .iter()
        .collect();
    json!({
        "platform": platform_name(d.platform),
        "token_ends_with": suffix,
        "app_id": d.app_id,
        "app_version": d.app_version,
        "locale": d.locale,
        "utc_offset_minutes": d.utc_offset_minutes,
        "registered_at": time(d.registered_at),
    })
}

/// A report the caller filed: whether it was handled and when, never how (the reporter
/// is told no more in their inbox either), nor the name the moderators kept.
pub(super) fn filed_report(r: &Report) -> Value {
    json!({
        "report_id": r.id,
        "target_user_id": r.target_id,
        "reason": r.reason.as_str(),
        "match_id": r.match_id,
        "comment": r.comment,
        "reported_at": time(r.at),
        "state": if r.resolved.is_some() { "handled" } else { "open" },
        "handled_at": r.resolved.map(|(at, _)| time(at)),
    })
}

/// The caller's seasons: the current one's rated matches, and each finished one's
/// archived rating with their place on its leaderboard (`null`: not listed).
pub(super) fn seasons(
    calendar: &Calendar,
    current: &str,
    current_matches: u32,
    archived: &[SeasonRating],
    finishes: &[SeasonFinish],
) -> Value {
    let name = |id: &str| calendar.season(id).map(|s| s.name.clone());
    json!({
        "current": {
            "season_id": current,
            "name": name(current),
            "ranked_matches": current_matches,
        },
        "finished": archived.iter().map(|s| json!({
            "season_id": s.season_id,
            "name": name(&s.season_id),
            "rating": s.rating.rating,
            "deviation": s.rating.deviation,
            "volatility": s.rating.volatility,
            "ranked_matches": s.season_matches,
            "tier": calendar.tier_name(s.rating.rating),
            "rank": finishes.iter().find(|f| f.season_id == s.season_id).map(|f| f.rank),
        })).collect::<Vec<_>>(),
    })
}

/// A notice of the caller's inbox, its body as ListNotices gives it.
pub(super) fn notice(n: &pb::Notice) -> Value {
    use pb::notice::Body;
    let (kind, body) = match &n.body {
        Some(Body::FriendRequest(f)) => ("friend_request", proto_friend(f)),
        Some(Body::FriendAdded(f)) => ("friend_added", proto_friend(f)),
        Some(Body::Invite(i)) => (
            "invite",
            json!({
                "from": i.from.as_ref().map(proto_friend),
                "room_id": i.room_id,
                "join_code": i.join_code,
                "settings": settings_from_pb(i.settings.as_ref()).ok(),
                "expires_at": proto_time(i.expires_at.as_ref()),
            }),
        ),
        Some(Body::MatchResult(m)) => ("match_result", summary(m)),
        Some(Body::ReportHandled(r)) => (
            "report_handled",
            json!({
                "report_id": r.report_id,
                "target_user_id": r.target_user_id,
                "reported_at": proto_time(r.reported_at.as_ref()),
            }),
        ),
        Some(Body::EventMatchReady(e)) => (
            "event_match_ready",
            json!({
                "event_id": e.event_id,
                "event_name": e.event_name,
                "round": e.round,
                "room_id": e.room_id,
                "opponent_name": e.opponent_name,
                "join_deadline": proto_time(e.join_deadline.as_ref()),
            }),
        ),
        Some(Body::EventStarting(e)) => (
            "event_starting",
            json!({
                "event_id": e.event_id,
                "event_name": e.event_name,
                "starts_at": proto_time(e.starts_at.as_ref()),
            }),
        ),
        Some(Body::EventCancelled(e)) => (
            "event_cancelled",
            json!({ "event_id": e.event_id, "event_name": e.event_name }),
        ),
        None => ("unknown", Value::Null),
    };
    json!({
        "id": n.id,
        "kind": kind,
        "created_at": proto_time(n.created_at.as_ref()),
        "expires_at": proto_time(n.expires_at.as_ref()),
        "read": n.read,
        kind: body,
    })
}

fn proto_friend(f: &pb::Friend) -> Value {
    json!({
        "user_id": f.user_id,
        "display_name": f.display_name,
        "is_guest": f.is_guest,
        "since": proto_time(f.since.as_ref()),
    })
}

/// A match as a "match result" notice told it (MatchHistory's summary).
fn summary(m: &pb::MatchSummary) -> Value {
    json!({
        "match_id": m.match_id,
        "room_id": m.room_id,
        "ranked": m.ranked,
        "settings": settings_from_pb(m.settings.as_ref()).ok(),
        "seats": m.seats.iter().map(|s| json!({
            "seat": s.seat,
            "side": s.side,
            "user_id": s.user_id,
            "display_name": s.display_name,
            "is_bot": s.is_bot,
        })).collect::<Vec<_>>(),
        "your_seat": m.your_seat,
        "winner_side": m.winner_side,
        "end_reason": m.end_reason().as_str_name(),
        "final_totals": m.final_totals,
        "rounds": m.rounds,
        "your_rating_change": m.your_rating_change.as_ref().map(|c| json!({
            "rating_before": c.rating_before,
            "rating_after": c.rating_after,
            "deviation_after": c.deviation_after,
        })),
        "started_at": proto_time(m.started_at.as_ref()),
        "ended_at": proto_time(m.ended_at.as_ref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use basra_push::Platform;

    #[test]
    fn a_push_device_shows_only_the_end_of_its_token() {
        let device = PushDevice {
            token: "secret-fcm-registration-token-ABC123".into(),
            platform: Platform::Fcm,
            app_id: "com.example.basra".into(),
            locale: "ar-EG".into(),
            app_version: "2.1.0".into(),
            utc_offset_minutes: 120,
            registered_at: DateTime::UNIX_EPOCH,
        };
        let shown = push_device(&device);
        assert_eq!(shown["token_ends_with"], "ABC123");
        assert_eq!(shown["platform"], "fcm");
        assert!(!shown.to_string().contains("secret"), "{shown}");
        let short = push_device(&PushDevice {
            token: "ab".into(),
            ..device
        });
        assert_eq!(short["token_ends_with"], "ab");
    }

    #[test]
    fn a_notice_names_its_kind_and_holds_its_body_under_it() {
        let n = pb::Notice {
            id: 7,
            kind: pb::NoticeKind::EventCancelled as i32,
            read: true,
            body: Some(pb::notice::Body::EventCancelled(pb::EventCancelledNotice {
                event_id: "e-1".into(),
                event_name: "Friday cup".into(),
            })),
            ..Default::default()
        };
        let shown = notice(&n);
        assert_eq!(shown["kind"], "event_cancelled");
        assert_eq!(shown["event_cancelled"]["event_name"], "Friday cup");
        assert_eq!(
            (shown["id"].as_u64(), &shown["read"]),
            (Some(7), &json!(true))
        );
    }
}
