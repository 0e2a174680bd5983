//! Friends and blocks in the memory store ([`Friends`]): the pair's links and the
//! counters, under the store's one lock (so each action is atomic, as a PostgreSQL
//! transaction is).

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore};
use crate::error::{AccountsError, Result};
use crate::friends::{
    Action, Change, FriendCode, FriendEntry, FriendLimits, FriendList, Link, Outcome, PairState,
    decide, request_day,
};
use crate::store::{Friends, User};

/// Friend codes, links and daily request counts.
#[derive(Debug, Default)]
pub(super) struct FriendBook {
    pub(super) codes: HashMap<Uuid, FriendCode>,
    pub(super) code_owners: HashMap<FriendCode, Uuid>,
    /// (from, to) → the link and since when.
    pub(super) links: HashMap<(Uuid, Uuid), (Link, DateTime<Utc>)>,
    pub(super) requests_sent: HashMap<(Uuid, NaiveDate), u32>,
}

impl FriendBook {
    pub(super) fn link_count(&self) -> u64 {
        self.links.len() as u64
    }

    fn friends_of(&self, user: Uuid) -> u32 {
        self.links
            .iter()
            .filter(|((from, _), (link, _))| *from == user && *link == Link::Friend)
            .count() as u32
    }

    fn link(&self, from: Uuid, to: Uuid) -> Option<Link> {
        self.links.get(&(from, to)).map(|(link, _)| *link)
    }

    /// The blocks held by any of `blockers`: (blocker, blocked).
    pub(super) fn blocks(&self, blockers: &[Uuid]) -> Vec<(Uuid, Uuid)> {
        self.links
            .iter()
            .filter(|((from, _), (link, _))| *link == Link::Block && blockers.contains(from))
            .map(|((from, to), _)| (*from, *to))
            .collect()
    }

    /// Drops every link to or from `user` and their code; answers the other players of
    /// their requests and friendships (not blocks).
    pub(super) fn forget(&mut self, user: Uuid) -> Vec<Uuid> {
        let mut linked = Vec::new();
        self.links.retain(|(from, to), (link, _)| {
            let other = if *from == user {
                *to
            } else if *to == user {
                *from
            } else {
                return true;
            };
            if *link != Link::Block && !linked.contains(&other) {
                linked.push(other);
            }
            false
        });
        if let Some(code) = self.codes.remove(&user) {
            self.code_owners.remove(&code);
        }
        self.requests_sent.retain(|(id, _), _| *id != user);
        linked
    }
}

impl Inner {
    pub(super) fn friend_code(&mut self, user_id: Uuid) -> Option<FriendCode> {
        if !self.users.contains_key(&user_id) {
            return None;
        }
        let friends = &mut self.friends;
        if let Some(code) = friends.codes.get(&user_id) {
            return Some(code.clone());
        }
        let code = loop {
            let code = FriendCode::generate();
            if !friends.code_owners.contains_key(&code) {
                break code;
            }
        };
        friends.code_owners.insert(code.clone(), user_id);
        friends.codes.insert(user_id, code.clone());
        Some(code)
    }

    pub(super) fn user_by_friend_code(&self, code: &FriendCode) -> Option<User> {
        let id = self.friends.code_owners.get(code)?;
        self.users.get(id).cloned()
    }

    pub(super) fn befriend(
        &mut self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> Result<Outcome> {
        if !self.users.contains_key(&actor) || !self.users.contains_key(&other) {
            return Err(AccountsError::UserNotFound);
        }
        let friends = &mut self.friends;
        let day = request_day(now);
        let pair = PairState {
            outgoing: friends.link(actor, other),
            incoming: friends.link(other, actor),
            actor_friends: friends.friends_of(actor),
            other_friends: friends.friends_of(other),
            actor_requests_today: friends
                .requests_sent
                .get(&(actor, day))
                .copied()
                .unwrap_or(0),
        };
        let (outcome, changes) = decide(action, &pair, &limits)?;
        for change in changes {
            match change {
                Change::SetOut(link) => {
                    friends.links.insert((actor, other), (link, now));
                }
                Change::SetIn(link) => {
                    friends.links.insert((other, actor), (link, now));
                }
                Change::ClearOut => {
                    friends.links.remove(&(actor, other));
                }
                Change::ClearIn => {
                    friends.links.remove(&(other, actor));
                }
                Change::CountRequest => {
                    *friends.requests_sent.entry((actor, day)).or_insert(0) += 1;
                }
            }
        }
        Ok(outcome)
    }

    pub(super) fn friend_list(&self, user_id: Uuid) -> FriendList {
        let mut list = FriendList::default();
        let entry = |id: &Uuid, since: DateTime<Utc>| {
            self.users.get(id).map(|u| FriendEntry {
                user_id: u.id,
                display_name: u.display_name.clone(),
                is_guest: u.is_guest,
                since,
            })
        };
        for ((from, to), (link, since)) in &self.friends.links {
            let (target, id) = match link {
                Link::Friend if *from == user_id => (&mut list.friends, to),
                Link::Request if *from == user_id => (&mut list.outgoing, to),
                Link::Request if *to == user_id => (&mut list.incoming, from),
                Link::Block if *from == user_id => (&mut list.blocked, to),
                _ => continue,
            };
            target.extend(entry(id, *since));
        }
        list.sorted()
    }
}

impl Friends for MemoryStore {
    async fn blocks(&self, blockers: &[Uuid]) -> Result<Vec<(Uuid, Uuid)>> {
        Ok(self.lock().friends.blocks(blockers))
    }

    async fn user_by_friend_code(&self, code: &FriendCode) -> Result<Option<User>> {
        Ok(self.lock().user_by_friend_code(code))
    }

    async fn friend_code(&self, user_id: Uuid) -> Result<Option<FriendCode>> {
        Ok(self.lock().friend_code(user_id))
    }

    async fn befriend(
        &self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> Result<Outcome> {
        self.lock().befriend(actor, other, action, limits, now)
    }

    async fn friend_list(&self, user_id: Uuid) -> Result<FriendList> {
        Ok(self.lock().friend_list(user_id))
    }
}
