//! `basra friends …`: the friend list, requests and blocks over accounts' friend RPCs.

use basra_proto::basra::accounts::v1::{
    self as pb, AcceptFriendRequest, AddFriendRequest, BlockPlayerRequest, CancelFriendRequest,
    DeclineFriendRequest, Friend, ListFriendsRequest, RemoveFriendRequest, UnblockPlayerRequest,
    add_friend_request::Target, watch_friends_response::Event,
};
use basra_proto::basra::matchmaking::v1::{InviteFriendRequest, InviteFriendResponse};

use crate::session::Session;

/// What to do about friends.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum FriendsCommand {
    /// Your friends, the requests waiting on either side, whom you block, and your friend code.
    List,
    /// Ask a player to be friends (or accept, when they already asked you).
    Add {
        /// Their username; or, with --code, their friend code (`ABCD-EF12`).
        who: String,
        /// `who` is a friend code.
        #[arg(long)]
        code: bool,
    },
    /// Accept a request (a name from `basra friends list`, or a user id).
    Accept {
        /// Who sent it.
        who: String,
    },
    /// Decline a request.
    Decline {
        /// Who sent it.
        who: String,
    },
    /// Withdraw your own request.
    Cancel {
        /// Whom you asked.
        who: String,
    },
    /// End a friendship.
    Remove {
        /// The friend.
        who: String,
    },
    /// Block a player (a name from your lists, or a user id).
    Block {
        /// The player.
        who: String,
    },
    /// Lift a block.
    Unblock {
        /// The player.
        who: String,
    },
    /// Follow your friends live: who is online, searching or playing (and where), and the
    /// requests and invites that arrive, until Ctrl-C.
    Watch,
    /// Invite a friend to the room you are seated in (made with `basra play create`);
    /// they join with the code the invite carries.
    Invite {
        /// The friend (a name from `basra friends list`, or a user id).
        who: String,
        /// The room to invite them to (its id).
        room: String,
    },
}

/// Runs `command` as the signed-in `session`, printing what happened.
pub async fn run(session: &Session, command: FriendsCommand) -> anyhow::Result<()> {
    let mut accounts = session.accounts();
    match command {
        FriendsCommand::List => {
            let list = accounts
                .list_friends(ListFriendsRequest {})
                .await?
                .into_inner();
            print!("{}", render_list(&list));
            // What each friend is doing: the feed's first event, its snapshot.
            let mut feed = watch(session, 0).await?;
            if let Some(pb::WatchFriendsResponse {
                event: Some(Event::Snapshot(snapshot)),
                ..
            }) = feed.message().await?
                && !snapshot.friends.is_empty()
            {
                println!("now:");
                for friend in &snapshot.friends {
                    println!("  {}", render_presence(friend));
                }
            }
        }
        FriendsCommand::Add { who, code } => {
            let target = if code {
                Target::FriendCode(who)
            } else {
                Target::Username(who)
            };
            let answer = accounts
                .add_friend(AddFriendRequest {
                    target: Some(target),
                })
                .await?
                .into_inner();
            let name = answer.friend.map(|f| f.display_name).unwrap_or_default();
            if answer.became_friends {
                println!("{name} had asked you too: you are friends now");
            } else {
                println!("friend request sent to {name}");
            }
        }
        FriendsCommand::Accept { who } => {
            let user_id = resolve(session, &who, |l| &l.incoming).await?;
            accounts
                .accept_friend(AcceptFriendRequest { user_id })
                .await?;
            println!("you are friends with {who} now");
        }
        FriendsCommand::Decline { who } => {
            let user_id = resolve(session, &who, |l| &l.incoming).await?;
            accounts
                .decline_friend(DeclineFriendRequest { user_id })
                .await?;
            println!("declined {who}'s request");
        }
        FriendsCommand::Cancel { who } => {
            let user_id = resolve(session, &who, |l| &l.outgoing).await?;
            accounts
                .cancel_friend(CancelFriendRequest { user_id })
                .await?;
            println!("withdrew your request to {who}");
        }
        FriendsCommand::Remove { who } => {
            let user_id = resolve(session, &who, |l| &l.friends).await?;
            accounts
                .remove_friend(RemoveFriendRequest { user_id })
                .await?;
            println!("{who} is no longer your friend");
        }
        FriendsCommand::Block { who } => {
            let user_id = resolve(session, &who, |l| &l.friends).await?;
            accounts
                .block_player(BlockPlayerRequest { user_id })
                .await?;
            println!("blocked {who}");
        }
        FriendsCommand::Unblock { who } => {
            let user_id = resolve(session, &who, |l| &l.blocked).await?;
            accounts
                .unblock_player(UnblockPlayerRequest { user_id })
                .await?;
            println!("unblocked {who}");
        }
        FriendsCommand::Watch => follow(session).await?,
        FriendsCommand::Invite { who, room } => {
            let user_id = resolve(session, &who, |l| &l.friends).await?;
            invite(session, &room, &user_id).await?;
            println!("invited {who} to {room}: they join with the code the invite carries");
        }
    }
    Ok(())
}

/// Opens the caller's feed (`AccountsService/WatchFriends`), resuming after
/// `last_seen_seq` (0: from the start).
pub async fn watch(
    session: &Session,
    last_seen_seq: u64,
) -> anyhow::Result<tonic::Streaming<pb::WatchFriendsResponse>> {
    Ok(session
        .accounts()
        .watch_friends(pb::WatchFriendsRequest { last_seen_seq })
        .await?
        .into_inner())
}

/// Invites the friend `user_id` to `room_id` (`MatchmakingService/InviteFriend`).
pub async fn invite(
    session: &Session,
    room_id: &str,
    user_id: &str,
) -> anyhow::Result<InviteFriendResponse> {
    Ok(session
        .matchmaking()
        .invite_friend(InviteFriendRequest {
            room_id: room_id.to_owned(),
            user_id: user_id.to_owned(),
        })
        .await?
        .into_inner())
}

/// Prints the feed as it comes, reopening it after a break from the last note seen.
async fn follow(session: &Session) -> anyhow::Result<()> {
    let mut last_seen = 0;
    let mut failures = 0u32;
    loop {
        let mut feed = match watch(session, last_seen).await {
            Ok(feed) => feed,
            Err(err) if failures < 8 => {
                failures += 1;
                eprintln!("the feed is unreachable ({err}); retrying");
                tokio::time::sleep(std::time::Duration::from_millis(250 << failures.min(5))).await;
                continue;
            }
            Err(err) => return Err(err),
        };
        loop {
            match feed.message().await {
                Ok(Some(event)) => {
                    failures = 0;
                    last_seen = last_seen.max(event.seq);
                    if let Some(text) = render_event(&event) {
                        println!("{text}");
                    }
                }
                Ok(None) => return Ok(()),
                Err(status) if status.code() == tonic::Code::Unavailable => break,
                Err(status) => return Err(status.into()),
            }
        }
    }
}

/// A friend and what they are doing, as one line.
pub fn render_presence(friend: &pb::FriendPresence) -> String {
    let name = friend
        .friend
        .as_ref()
        .map(|f| f.display_name.as_str())
        .unwrap_or("?");
    let presence = friend.presence.clone().unwrap_or_default();
    let doing = match pb::Activity::try_from(presence.activity) {
        Ok(pb::Activity::Online) => "online".to_owned(),
        Ok(pb::Activity::InQueue) => "looking for a match".to_owned(),
        Ok(pb::Activity::InMatch) if presence.room_id.is_empty() => "playing".to_owned(),
        Ok(pb::Activity::InMatch) => format!("playing in room {}", presence.room_id),
        _ => "offline".to_owned(),
    };
    format!("{name}: {doing}")
}

/// One feed event as a line for the terminal (`None` for nothing worth a line).
pub fn render_event(event: &pb::WatchFriendsResponse) -> Option<String> {
    let name = |f: &Option<Friend>| {
        f.as_ref()
            .map(|f| f.display_name.clone())
            .unwrap_or_default()
    };
    Some(match event.event.as_ref()? {
        Event::Snapshot(snapshot) => {
            let mut out = String::from("friends:");
            if snapshot.friends.is_empty() {
                out.push_str(" none yet (basra friends add NAME)");
            }
            for friend in &snapshot.friends {
                out.push_str(&format!("\n  {}", render_presence(friend)));
            }
            for request in &snapshot.incoming {
                out.push_str(&format!(
                    "\n{} asks to be your friend (basra friends accept {})",
                    request.display_name, request.display_name
                ));
            }
            if let Some(unread) = crate::inbox::unread_line(snapshot.unread_notices) {
                out.push_str(&format!("\n{unread}"));
            }
            out
        }
        Event::PresenceChanged(friend) => render_presence(friend),
        Event::FriendRequest(from) => format!(
            "{} asks to be your friend (basra friends accept {})",
            from.display_name, from.display_name
        ),
        Event::FriendAdded(friend) => {
            format!("{} accepted: you are friends now", friend.display_name)
        }
        Event::Invite(invite) => format!(
            "{} invites you to play: basra play join {}",
            name(&invite.from),
            invite.join_code
        ),
        Event::Notice(notice) => crate::inbox::render_notice(notice),
    })
}

/// The user id `who` names: a user id as is, else the one player of that display name
/// in the list `pick` chooses (or, failing that, in any of the caller's lists).
async fn resolve(
    session: &Session,
    who: &str,
    pick: impl Fn(&pb::ListFriendsResponse) -> &Vec<Friend>,
) -> anyhow::Result<String> {
    if uuid::Uuid::parse_str(who).is_ok() {
        return Ok(who.to_owned());
    }
    let list = session
        .accounts()
        .list_friends(ListFriendsRequest {})
        .await?
        .into_inner();
    let named = |friends: &[Friend]| -> Vec<String> {
        friends
            .iter()
            .filter(|f| f.display_name.eq_ignore_ascii_case(who))
            .map(|f| f.user_id.clone())
            .collect()
    };
    let mut found = named(pick(&list));
    if found.is_empty() {
        for other in [&list.friends, &list.incoming, &list.outgoing, &list.blocked] {
            found.extend(named(other));
        }
        found.dedup();
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => anyhow::bail!("nobody called {who:?} in your lists (`basra friends list`)"),
        _ => anyhow::bail!("several players are called {who:?}: give the user id instead"),
    }
}

/// The lists as the terminal shows them.
pub fn render_list(list: &pb::ListFriendsResponse) -> String {
    let mut out = format!("your friend code: {}\n", list.friend_code);
    for (title, friends) in [
        ("friends", &list.friends),
        ("asking you", &list.incoming),
        ("you asked", &list.outgoing),
        ("blocked", &list.blocked),
    ] {
        if friends.is_empty() {
            continue;
        }
        out.push_str(&format!("{title}:\n"));
        for f in friends {
            let guest = if f.is_guest { " (guest)" } else { "" };
            out.push_str(&format!("  {}{guest}  {}\n", f.display_name, f.user_id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn friend(name: &str, guest: bool) -> Friend {
        Friend {
            user_id: format!("id-{name}"),
            display_name: name.into(),
            is_guest: guest,
            since: None,
        }
    }

    #[test]
    fn feed_events_read_as_sentences() {
        let playing = pb::FriendPresence {
            friend: Some(friend("Amira", false)),
            presence: Some(pb::Presence {
                activity: pb::Activity::InMatch as i32,
                room_id: "r-9".into(),
            }),
        };
        assert_eq!(render_presence(&playing), "Amira: playing in room r-9");
        let invite = pb::WatchFriendsResponse {
            seq: 3,
            at: None,
            notice_id: 3,
            event: Some(Event::Invite(pb::Invite {
                from: Some(friend("Amira", false)),
                join_code: "ABC234".into(),
                ..Default::default()
            })),
        };
        assert_eq!(
            render_event(&invite).unwrap(),
            "Amira invites you to play: basra play join ABC234"
        );
        let offline = pb::FriendPresence {
            friend: Some(friend("Badr", false)),
            presence: None,
        };
        assert_eq!(render_presence(&offline), "Badr: offline");
    }

    #[test]
    fn the_list_shows_the_code_and_only_lists_with_someone_in_them() {
        let list = pb::ListFriendsResponse {
            friends: vec![friend("Amira", false)],
            incoming: vec![friend("Guest 12", true)],
            friend_code: "ABCD-EF12".into(),
            ..Default::default()
        };
        assert_eq!(
            render_list(&list),
            "your friend code: ABCD-EF12\nfriends:\n  Amira  id-Amira\nasking you:\n  Guest 12 (guest)  id-Guest 12\n"
        );
    }
}
