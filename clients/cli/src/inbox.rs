//! `basra inbox …`: the notices kept for the player while they were away (ListNotices,
//! MarkNoticesRead), and the unread count `basra play` and `basra friends watch` show.

use basra_proto::basra::accounts::v1::{
    self as pb, CountUnreadNoticesRequest, ListNoticesRequest, MarkNoticesReadRequest, notice::Body,
};

use crate::session::Session;

/// What to do with the inbox.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum InboxCommand {
    /// Your notices, newest first, with the unread count (the default).
    List {
        /// Only the unread ones.
        #[arg(long)]
        unread: bool,
        /// At most this many (1..100).
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// Mark notices read: the ids given, or with --all every one.
    Read {
        /// The notices' ids (as `basra inbox list` shows them).
        ids: Vec<u64>,
        /// Every notice up to the newest.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
}

/// Runs `command` (`None`: list) as the signed-in `session`, printing what happened.
pub async fn run(session: &Session, command: Option<InboxCommand>) -> anyhow::Result<()> {
    let mut accounts = session.accounts();
    match command.unwrap_or(InboxCommand::List {
        unread: false,
        limit: 20,
    }) {
        InboxCommand::List { unread, limit } => {
            let page = accounts
                .list_notices(ListNoticesRequest {
                    page_size: limit,
                    page_token: String::new(),
                    unread_only: unread,
                })
                .await?
                .into_inner();
            print!("{}", render_list(&page));
        }
        InboxCommand::Read { ids, all } => {
            let request = if all {
                let newest = accounts
                    .list_notices(ListNoticesRequest {
                        page_size: 1,
                        ..Default::default()
                    })
                    .await?
                    .into_inner()
                    .notices
                    .first()
                    .map(|n| n.id);
                let Some(newest) = newest else {
                    println!("your inbox is empty");
                    return Ok(());
                };
                MarkNoticesReadRequest {
                    ids: Vec::new(),
                    up_to_id: newest,
                }
            } else if ids.is_empty() {
                anyhow::bail!("name the notices to mark read (their ids), or --all");
            } else {
                MarkNoticesReadRequest { ids, up_to_id: 0 }
            };
            let answer = accounts.mark_notices_read(request).await?.into_inner();
            println!(
                "marked {} read; {} unread left",
                answer.marked, answer.unread_count
            );
        }
    }
    Ok(())
}

/// "N unread in your inbox (basra inbox)", or `None` when nothing is unread or the count
/// cannot be read (it is a hint, never in the way).
pub async fn unread_hint(session: &Session) -> Option<String> {
    let count = session
        .accounts()
        .count_unread_notices(CountUnreadNoticesRequest {})
        .await
        .ok()?
        .into_inner()
        .unread_count;
    unread_line(count)
}

/// The unread count as a line; `None` for 0.
pub fn unread_line(count: u32) -> Option<String> {
    match count {
        0 => None,
        1 => Some("1 unread notice in your inbox (basra inbox)".into()),
        n => Some(format!("{n} unread notices in your inbox (basra inbox)")),
    }
}

/// A page of notices as the terminal shows it: one line each, `*` before the unread.
pub fn render_list(page: &pb::ListNoticesResponse) -> String {
    let mut out = format!("{} unread\n", page.unread_count);
    if page.notices.is_empty() {
        out.push_str("  (no notices)\n");
    }
    for notice in &page.notices {
        let mark = if notice.read { ' ' } else { '*' };
        out.push_str(&format!(
            "{mark} {:>6}  {}\n",
            notice.id,
            render_notice(notice)
        ));
    }
    out
}

/// One notice as a sentence.
pub fn render_notice(notice: &pb::Notice) -> String {
    let Some(body) = &notice.body else {
        return "a notice this client cannot show (update basra)".into();
    };
    match body {
        Body::FriendRequest(from) => format!(
            "{} asks to be your friend (basra friends accept {})",
            from.display_name, from.display_name
        ),
        Body::FriendAdded(friend) => {
            format!("{} accepted: you are friends now", friend.display_name)
        }
        Body::Invite(invite) => format!(
            "{} invited you to play: basra play join {}",
            invite
                .from
                .as_ref()
                .map(|f| f.display_name.as_str())
                .unwrap_or("a friend"),
            invite.join_code
        ),
        Body::MatchResult(summary) => {
            let mine = summary
                .seats
                .get(summary.your_seat as usize)
                .map(|seat| seat.side);
            let outcome = match (summary.winner_side, mine) {
                (Some(winner), Some(side)) if winner == side => "you won",
                (Some(_), Some(_)) => "you lost",
                _ => "no winner",
            };
            let others: Vec<&str> = summary
                .seats
                .iter()
                .filter(|seat| seat.seat != summary.your_seat)
                .map(|seat| seat.display_name.as_str())
                .collect();
            let totals: Vec<String> = summary.final_totals.iter().map(u32::to_string).collect();
            format!(
                "match against {} ended while you were away: {outcome} ({})",
                others.join(", "),
                totals.join("-")
            )
        }
        Body::ReportHandled(_) => "a moderator handled your report. Thank you".into(),
        Body::EventMatchReady(ready) => format!(
            "{}, round {}: your match against {} is ready in room {}",
            ready.event_name,
            ready.round,
            if ready.opponent_name.is_empty() {
                "your opponent"
            } else {
                &ready.opponent_name
            },
            ready.room_id
        ),
        Body::EventStarting(starting) => format!("{} starts soon", starting.event_name),
        Body::EventCancelled(cancelled) => format!("{} was cancelled", cancelled.event_name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(id: u64, read: bool, body: Body) -> pb::Notice {
        pb::Notice {
            id,
            read,
            body: Some(body),
            ..Default::default()
        }
    }

    #[test]
    fn notices_read_as_lines_with_the_unread_marked() {
        let page = pb::ListNoticesResponse {
            notices: vec![
                notice(
                    7,
                    false,
                    Body::EventMatchReady(pb::EventMatchReadyNotice {
                        event_name: "Friday cup".into(),
                        round: 2,
                        room_id: "r-1".into(),
                        opponent_name: "Mona".into(),
                        ..Default::default()
                    }),
                ),
                notice(
                    3,
                    true,
                    Body::EventCancelled(pb::EventCancelledNotice {
                        event_id: "e".into(),
                        event_name: "Night cup".into(),
                    }),
                ),
            ],
            next_page_token: String::new(),
            unread_count: 1,
        };
        assert_eq!(
            render_list(&page),
            "1 unread\n\
             *      7  Friday cup, round 2: your match against Mona is ready in room r-1\n\
             \x20      3  Night cup was cancelled\n"
        );
        assert_eq!(unread_line(0), None);
        assert_eq!(
            unread_line(2).unwrap(),
            "2 unread notices in your inbox (basra inbox)"
        );
    }

    #[test]
    fn a_match_result_says_who_won() {
        let seat = |seat: u32, name: &str| pb::MatchSeat {
            seat,
            side: seat,
            display_name: name.into(),
            ..Default::default()
        };
        let summary = pb::MatchSummary {
            seats: vec![seat(0, "Amira"), seat(1, "Badr")],
            your_seat: 1,
            winner_side: Some(1),
            final_totals: vec![40, 101],
            ..Default::default()
        };
        assert_eq!(
            render_notice(&notice(1, false, Body::MatchResult(summary))),
            "match against Amira ended while you were away: you won (40-101)"
        );
    }
}
