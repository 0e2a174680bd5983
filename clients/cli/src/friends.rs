//! `basra friends …`: the friend list, requests and blocks over accounts' friend RPCs.

use basra_proto::basra::accounts::v1::{
    self as pb, AcceptFriendRequest, AddFriendRequest, BlockPlayerRequest, CancelFriendRequest,
    DeclineFriendRequest, Friend, ListFriendsRequest, RemoveFriendRequest, UnblockPlayerRequest,
    add_friend_request::Target,
};

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
    }
    Ok(())
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
