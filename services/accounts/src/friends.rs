//! Friends: the rules of a pair of players, apart from any storage.
//!
//! Between two players A and B there are at most two links, one each way: A→B is a
//! pending friend request from A, one half of a friendship (a friendship is always both
//! halves), or A blocking B. Every friend action loads the pair's two links and the
//! counts the limits need, asks [`decide`] what to change, and writes the answer in the
//! same transaction (PostgreSQL) or under the same lock (memory): the rules live here
//! once, and the two stores cannot disagree about them.
//!
//! A block is private: a blocked player asking to befriend the blocker is told there is
//! no such player, as if the blocker did not exist.

use std::fmt;

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use rand::Rng as _;
use uuid::Uuid;

use crate::error::{AccountsError, Result};

/// The alphabet of friend codes: Crockford's base 32 (no I, L, O, U), so a code read
/// aloud or copied by hand survives.
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a friend code (40 random bits).
pub const FRIEND_CODE_LEN: usize = 8;

/// A player's friend code: 8 characters of Crockford base 32, shown as `ABCD-EFGH`.
/// Another player sends a friend request with it when they do not know a username
/// (guests have none).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FriendCode(String);

impl FriendCode {
    /// A new random code.
    pub fn generate() -> FriendCode {
        let mut rng = rand::rng();
        FriendCode(
            (0..FRIEND_CODE_LEN)
                .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
                .collect(),
        )
    }

    /// Reads a code as a player may type it: any case, with or without the dash or
    /// spaces; `O` is read as zero and `I`/`L` as one, as Crockford's base 32 does.
    pub fn parse(raw: &str) -> Result<FriendCode> {
        let mut code = String::with_capacity(FRIEND_CODE_LEN);
        for c in raw.chars().filter(|c| !matches!(c, '-' | ' ')) {
            let c = match c.to_ascii_uppercase() {
                'O' => '0',
                'I' | 'L' => '1',
                c => c,
            };
            if !c.is_ascii() || !CODE_ALPHABET.contains(&(c as u8)) {
                return Err(AccountsError::invalid(
                    "friend_code",
                    format!("{c:?} is not a friend code character (digits and letters but U)"),
                ));
            }
            code.push(c);
        }
        if code.len() != FRIEND_CODE_LEN {
            return Err(AccountsError::invalid(
                "friend_code",
                format!(
                    "must be {FRIEND_CODE_LEN} characters such as ABCD-EF12, not {}",
                    code.len()
                ),
            ));
        }
        Ok(FriendCode(code))
    }

    /// The code as stored: 8 characters, no dash.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FriendCode {
    /// The code as shown to players: `ABCD-EFGH`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", &self.0[..4], &self.0[4..])
    }
}

/// One player's link to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// A friend request waiting for the other's answer.
    Request,
    /// One half of a friendship (the other half is the reverse link).
    Friend,
    /// This player blocks the other.
    Block,
}

impl Link {
    /// The name stored in PostgreSQL.
    pub fn as_str(self) -> &'static str {
        match self {
            Link::Request => "request",
            Link::Friend => "friend",
            Link::Block => "block",
        }
    }

    /// The link stored as `name`.
    pub fn from_stored(name: &str) -> Result<Link> {
        match name {
            "request" => Ok(Link::Request),
            "friend" => Ok(Link::Friend),
            "block" => Ok(Link::Block),
            other => Err(AccountsError::Internal(format!(
                "unknown friend link {other:?}"
            ))),
        }
    }
}

/// What a player does about another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Asks to be friends (accepts instead when the other already asked).
    Add,
    /// Accepts the other's request.
    Accept,
    /// Declines the other's request.
    Decline,
    /// Withdraws one's own request.
    Cancel,
    /// Ends a friendship.
    Remove,
    /// Blocks the other (ends a friendship and pending requests both ways).
    Block,
    /// Lifts one's block.
    Unblock,
}

/// The limits every friend action is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FriendLimits {
    /// Most friends a player may have.
    pub max_friends: u32,
    /// Most friend requests a player may send per UTC day (withdrawn ones count).
    pub requests_per_day: u32,
}

/// What the stores read before [`decide`]: the pair's links and the counts the limits
/// need. `actor` is the player acting, `other` the one acted upon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PairState {
    /// The actor's link to the other.
    pub outgoing: Option<Link>,
    /// The other's link to the actor.
    pub incoming: Option<Link>,
    /// The actor's friends.
    pub actor_friends: u32,
    /// The other's friends.
    pub other_friends: u32,
    /// Requests the actor has sent today (UTC).
    pub actor_requests_today: u32,
}

/// One write [`decide`] asks for. `Out` is the actor's link to the other, `In` the
/// other's link to the actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Sets the actor's link to the other.
    SetOut(Link),
    /// Sets the other's link to the actor.
    SetIn(Link),
    /// Removes the actor's link to the other.
    ClearOut,
    /// Removes the other's link to the actor.
    ClearIn,
    /// Counts one request sent today by the actor.
    CountRequest,
}

/// What an action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A request was sent.
    Requested,
    /// The two are friends now.
    BecameFriends,
    /// The change was made (declined, withdrawn, removed, blocked, unblocked).
    Done,
}

/// Why a friend action is refused. Each maps to one gRPC code (see
/// `accounts.proto`), and the message is the client's to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No such player, or one who blocks the actor (not told apart).
    #[error("no such player")]
    NoSuchPlayer,
    /// A player cannot befriend or block themselves.
    #[error("that is you")]
    Yourself,
    /// The two are friends already.
    #[error("you are friends already")]
    AlreadyFriends,
    /// The actor's request is still waiting.
    #[error("your friend request to this player is still waiting for an answer")]
    AlreadyRequested,
    /// The actor blocks the other.
    #[error("you block this player: unblock them first")]
    YouBlock,
    /// Accept or decline without a request from the other.
    #[error("this player has not sent you a friend request")]
    NoRequest,
    /// Cancel without a request of one's own.
    #[error("you have not sent this player a friend request")]
    NoOwnRequest,
    /// Remove without a friendship.
    #[error("this player is not your friend")]
    NotFriends,
    /// The actor's friend list is full.
    #[error("your friend list is full: remove a friend first")]
    YourListFull,
    /// The other's friend list is full.
    #[error("this player's friend list is full")]
    TheirListFull,
    /// The actor sent as many requests today as allowed.
    #[error("too many friend requests today: retry tomorrow (UTC)")]
    TooManyRequests,
}

impl Refusal {
    /// The gRPC code of this refusal.
    pub fn code(self) -> tonic::Code {
        use tonic::Code;
        match self {
            Refusal::NoSuchPlayer | Refusal::NoRequest | Refusal::NoOwnRequest => Code::NotFound,
            Refusal::NotFriends => Code::NotFound,
            Refusal::Yourself => Code::InvalidArgument,
            Refusal::AlreadyFriends | Refusal::AlreadyRequested => Code::AlreadyExists,
            Refusal::YouBlock | Refusal::YourListFull | Refusal::TheirListFull => {
                Code::FailedPrecondition
            }
            Refusal::TooManyRequests => Code::ResourceExhausted,
        }
    }
}

/// What `actor` doing `action` to the other changes, given the pair's state, or why
/// it is refused. Pure: the stores read the state and write the changes atomically.
pub fn decide(
    action: Action,
    pair: &PairState,
    limits: &FriendLimits,
) -> Result<(Outcome, Vec<Change>), Refusal> {
    use Link::{Block, Friend, Request};
    let friends_both = vec![Change::SetOut(Friend), Change::SetIn(Friend)];
    match action {
        Action::Add => {
            if pair.outgoing == Some(Block) {
                return Err(Refusal::YouBlock);
            }
            if pair.incoming == Some(Block) {
                return Err(Refusal::NoSuchPlayer);
            }
            match (pair.outgoing, pair.incoming) {
                (Some(Friend), _) => Err(Refusal::AlreadyFriends),
                (Some(Request), _) => Err(Refusal::AlreadyRequested),
                // They asked first: asking back is accepting.
                (_, Some(Request)) => {
                    check_room(pair, limits)?;
                    Ok((Outcome::BecameFriends, friends_both))
                }
                _ => {
                    if pair.actor_requests_today >= limits.requests_per_day {
                        return Err(Refusal::TooManyRequests);
                    }
                    if pair.actor_friends >= limits.max_friends {
                        return Err(Refusal::YourListFull);
                    }
                    Ok((
                        Outcome::Requested,
                        vec![Change::SetOut(Request), Change::CountRequest],
                    ))
                }
            }
        }
        Action::Accept => {
            if pair.incoming != Some(Request) {
                return Err(Refusal::NoRequest);
            }
            check_room(pair, limits)?;
            Ok((Outcome::BecameFriends, friends_both))
        }
        Action::Decline => match pair.incoming {
            Some(Request) => Ok((Outcome::Done, vec![Change::ClearIn])),
            _ => Err(Refusal::NoRequest),
        },
        Action::Cancel => match pair.outgoing {
            Some(Request) => Ok((Outcome::Done, vec![Change::ClearOut])),
            _ => Err(Refusal::NoOwnRequest),
        },
        Action::Remove => match pair.outgoing {
            Some(Friend) => Ok((Outcome::Done, vec![Change::ClearOut, Change::ClearIn])),
            _ => Err(Refusal::NotFriends),
        },
        Action::Block => {
            let mut changes = vec![Change::SetOut(Block)];
            // Their request or their half of a friendship goes; their own block stays.
            if matches!(pair.incoming, Some(Request | Friend)) {
                changes.push(Change::ClearIn);
            }
            Ok((Outcome::Done, changes))
        }
        Action::Unblock => match pair.outgoing {
            Some(Block) => Ok((Outcome::Done, vec![Change::ClearOut])),
            // Nothing to lift: already as asked.
            _ => Ok((Outcome::Done, Vec::new())),
        },
    }
}

/// Both friend lists have room for one more.
fn check_room(pair: &PairState, limits: &FriendLimits) -> Result<(), Refusal> {
    if pair.actor_friends >= limits.max_friends {
        return Err(Refusal::YourListFull);
    }
    if pair.other_friends >= limits.max_friends {
        return Err(Refusal::TheirListFull);
    }
    Ok(())
}

/// The UTC day `now` falls in, as the request counter keys it.
pub fn request_day(now: DateTime<Utc>) -> chrono::NaiveDate {
    now.date_naive()
}

/// How long until the request counter of `now`'s day starts over (the next UTC midnight).
pub fn until_next_day(now: DateTime<Utc>) -> std::time::Duration {
    let next = (now.date_naive() + ChronoDuration::days(1))
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(now);
    (next - now).to_std().unwrap_or_default()
}

/// A player as a friend list shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendEntry {
    /// The player.
    pub user_id: Uuid,
    /// Their display name.
    pub display_name: String,
    /// Whether they are a guest.
    pub is_guest: bool,
    /// Since when the link exists (friends since, requested at, blocked at).
    pub since: DateTime<Utc>,
}

/// A player's friends, requests and blocks, each list ordered by display name, then id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FriendList {
    /// The players whose friendship is accepted, both ways.
    pub friends: Vec<FriendEntry>,
    /// Requests others sent to the player.
    pub incoming: Vec<FriendEntry>,
    /// Requests the player sent that wait for an answer.
    pub outgoing: Vec<FriendEntry>,
    /// Players the player blocks.
    pub blocked: Vec<FriendEntry>,
}

impl FriendList {
    /// Sorts every list the way the API promises.
    pub fn sorted(mut self) -> FriendList {
        for list in [
            &mut self.friends,
            &mut self.incoming,
            &mut self.outgoing,
            &mut self.blocked,
        ] {
            list.sort_by(|a, b| {
                a.display_name
                    .cmp(&b.display_name)
                    .then(a.user_id.cmp(&b.user_id))
            });
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Link::{Block, Friend, Request};

    const LIMITS: FriendLimits = FriendLimits {
        max_friends: 3,
        requests_per_day: 2,
    };

    fn pair(outgoing: Option<Link>, incoming: Option<Link>) -> PairState {
        PairState {
            outgoing,
            incoming,
            ..PairState::default()
        }
    }

    #[test]
    fn friend_codes_read_what_players_type() {
        let code = FriendCode::parse("abcd-ef12").unwrap();
        assert_eq!(code.as_str(), "ABCDEF12");
        assert_eq!(code.to_string(), "ABCD-EF12");
        assert_eq!(FriendCode::parse("O0IL 1234").unwrap().as_str(), "00111234");
        assert!(FriendCode::parse("ABCD-EF1").is_err());
        assert!(FriendCode::parse("ABCD-EF123").is_err());
        assert!(FriendCode::parse("ABCD-EFU2").is_err());
        assert!(FriendCode::parse("ABCD-EFé2").is_err());
        for _ in 0..100 {
            let code = FriendCode::generate();
            assert_eq!(FriendCode::parse(&code.to_string()).unwrap(), code);
        }
    }

    #[test]
    fn a_request_then_an_answer() {
        let (outcome, changes) = decide(Action::Add, &pair(None, None), &LIMITS).unwrap();
        assert_eq!(outcome, Outcome::Requested);
        assert_eq!(changes, [Change::SetOut(Request), Change::CountRequest]);
        // Seen from the other side: accept makes both halves.
        let (outcome, changes) =
            decide(Action::Accept, &pair(None, Some(Request)), &LIMITS).unwrap();
        assert_eq!(outcome, Outcome::BecameFriends);
        assert_eq!(changes, [Change::SetOut(Friend), Change::SetIn(Friend)]);
        // Asking back is accepting.
        let (outcome, _) = decide(Action::Add, &pair(None, Some(Request)), &LIMITS).unwrap();
        assert_eq!(outcome, Outcome::BecameFriends);
        assert_eq!(
            decide(Action::Decline, &pair(None, Some(Request)), &LIMITS)
                .unwrap()
                .1,
            [Change::ClearIn]
        );
        assert_eq!(
            decide(Action::Cancel, &pair(Some(Request), None), &LIMITS)
                .unwrap()
                .1,
            [Change::ClearOut]
        );
    }

    #[test]
    fn refusals() {
        let refused = |action, state: PairState| decide(action, &state, &LIMITS).unwrap_err();
        assert_eq!(
            refused(Action::Add, pair(Some(Friend), Some(Friend))),
            Refusal::AlreadyFriends
        );
        assert_eq!(
            refused(Action::Add, pair(Some(Request), None)),
            Refusal::AlreadyRequested
        );
        assert_eq!(
            refused(Action::Add, pair(Some(Block), None)),
            Refusal::YouBlock
        );
        assert_eq!(
            refused(Action::Add, pair(None, Some(Block))),
            Refusal::NoSuchPlayer
        );
        assert_eq!(
            refused(Action::Accept, pair(Some(Request), None)),
            Refusal::NoRequest
        );
        assert_eq!(
            refused(Action::Decline, pair(None, None)),
            Refusal::NoRequest
        );
        assert_eq!(
            refused(Action::Cancel, pair(None, Some(Request))),
            Refusal::NoOwnRequest
        );
        assert_eq!(
            refused(Action::Remove, pair(Some(Request), None)),
            Refusal::NotFriends
        );
        let sent_two = PairState {
            actor_requests_today: 2,
            ..PairState::default()
        };
        assert_eq!(refused(Action::Add, sent_two), Refusal::TooManyRequests);
        let my_list_full = PairState {
            actor_friends: 3,
            ..pair(None, Some(Request))
        };
        assert_eq!(refused(Action::Accept, my_list_full), Refusal::YourListFull);
        let their_list_full = PairState {
            other_friends: 3,
            ..pair(None, Some(Request))
        };
        assert_eq!(
            refused(Action::Accept, their_list_full),
            Refusal::TheirListFull
        );
    }

    #[test]
    fn a_block_ends_the_friendship_and_keeps_the_other_block() {
        let (_, changes) =
            decide(Action::Block, &pair(Some(Friend), Some(Friend)), &LIMITS).unwrap();
        assert_eq!(changes, [Change::SetOut(Block), Change::ClearIn]);
        let (_, changes) = decide(Action::Block, &pair(None, Some(Block)), &LIMITS).unwrap();
        assert_eq!(changes, [Change::SetOut(Block)]);
        let (_, changes) = decide(Action::Unblock, &pair(None, None), &LIMITS).unwrap();
        assert!(changes.is_empty());
        let (_, changes) = decide(Action::Unblock, &pair(Some(Block), None), &LIMITS).unwrap();
        assert_eq!(changes, [Change::ClearOut]);
    }

    #[test]
    fn the_request_counter_starts_over_at_utc_midnight() {
        let now = "2026-12-01T23:59:30Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(until_next_day(now), std::time::Duration::from_secs(30));
        assert_eq!(request_day(now).to_string(), "2026-12-01");
    }
}
