//! The memory store's lobby: rooms, the public listing, join codes, expiries,
//! CreateRoom's idempotency, wrong-code counters, invites and each player's last room,
//! one mutex over all of them.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    sync::MutexGuard,
};

use super::{MemoryStore, lock};
use crate::{
    clock::Millis,
    error::Result,
    store::{
        Occupant,
        lobby::{LobbyFilter, LobbyPage, LobbyStore, RoomRecord, RoomStatus, TakeSeat},
    },
};

/// Everything the lobby holds.
#[derive(Debug, Default)]
pub(super) struct LobbyState {
    rooms: HashMap<String, RoomRecord>,
    lobby: BTreeSet<(u64, String)>,
    lobby_seq: u64,
    codes: HashMap<String, String>,
    /// Rooms by expiry time (those with one).
    room_expiry: BTreeSet<(Millis, String)>,
    /// Expired rooms by the time they are forgotten (their keys' retention).
    room_forget: BTreeSet<(Millis, String)>,
    player_rooms: HashMap<String, String>,
    requests: HashMap<(String, String), String>,
    guesses: HashMap<(String, i64), u32>,
    /// (account, room) invites, noted by InviteFriend.
    invites: HashSet<(String, String)>,
}

impl LobbyState {
    fn room_full(room: &RoomRecord) -> bool {
        room.seats.iter().all(|s| *s != Occupant::Open)
    }
}

impl MemoryStore {
    fn lock_lobby(&self) -> MutexGuard<'_, LobbyState> {
        lock(&self.lobby)
    }
}

#[tonic::async_trait]
impl LobbyStore for MemoryStore {
    async fn claim_request(
        &self,
        user_id: &str,
        request_id: &str,
        room_id: &str,
    ) -> Result<String> {
        let mut s = self.lock_lobby();
        Ok(s.requests
            .entry((user_id.to_owned(), request_id.to_owned()))
            .or_insert_with(|| room_id.to_owned())
            .clone())
    }

    async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool> {
        let mut s = self.lock_lobby();
        if s.codes.contains_key(code) {
            return Ok(false);
        }
        s.codes.insert(code.to_owned(), room_id.to_owned());
        Ok(true)
    }

    async fn insert_room(&self, room: &RoomRecord) -> Result<()> {
        let mut s = self.lock_lobby();
        let mut room = room.clone();
        let full = LobbyState::room_full(&room);
        room.status = if full {
            RoomStatus::Full
        } else {
            RoomStatus::Open
        };
        if room.public && !full {
            s.lobby_seq += 1;
            room.list_seq = s.lobby_seq;
            s.lobby.insert((room.list_seq, room.id.clone()));
        }
        if room.expires_ms > 0 {
            s.room_expiry.insert((room.expires_ms, room.id.clone()));
        }
        s.rooms.insert(room.id.clone(), room);
        Ok(())
    }

    async fn room(&self, id: &str) -> Result<Option<RoomRecord>> {
        Ok(self.lock_lobby().rooms.get(id).cloned())
    }

    async fn room_by_code(&self, code: &str) -> Result<Option<String>> {
        Ok(self.lock_lobby().codes.get(code).cloned())
    }

    async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat> {
        let mut s = self.lock_lobby();
        let Some(room) = s.rooms.get_mut(room_id) else {
            return Ok(TakeSeat::NotFound);
        };
        if let Some(seat) = room
            .seats
            .iter()
            .position(|o| matches!(o, Occupant::Player { user_id: u, .. } if u == user_id))
        {
            return Ok(TakeSeat::Already { seat: seat as u32 });
        }
        match room.status {
            RoomStatus::Closed => return Ok(TakeSeat::Closed),
            RoomStatus::Full => return Ok(TakeSeat::Full),
            RoomStatus::Open => {}
        }
        let seat = match preferred {
            Some(p) => {
                let Some(o) = room.seats.get(p as usize) else {
                    return Ok(TakeSeat::NoSuchSeat);
                };
                if *o != Occupant::Open {
                    return Ok(TakeSeat::SeatTaken);
                }
                p as usize
            }
            None => match room.seats.iter().position(|o| *o == Occupant::Open) {
                Some(seat) => seat,
                None => return Ok(TakeSeat::Full),
            },
        };
        room.seats[seat] = Occupant::Player {
            user_id: user_id.to_owned(),
            guest,
            rating: None,
        };
        let full = LobbyState::room_full(room);
        if full {
            room.status = RoomStatus::Full;
            let seq = room.list_seq;
            s.lobby.remove(&(seq, room_id.to_owned()));
        }
        Ok(TakeSeat::Seated {
            seat: seat as u32,
            full,
        })
    }

    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()> {
        let mut s = self.lock_lobby();
        let Some(room) = s.rooms.get_mut(room_id) else {
            return Ok(());
        };
        let holds = matches!(room.seats.get(seat as usize),
            Some(Occupant::Player { user_id: u, .. }) if u == user_id);
        if !holds {
            return Ok(());
        }
        room.seats[seat as usize] = Occupant::Open;
        if room.status == RoomStatus::Full {
            room.status = RoomStatus::Open;
            if room.public {
                let entry = (room.list_seq, room.id.clone());
                s.lobby.insert(entry);
            }
        }
        Ok(())
    }

    async fn close_room(&self, room_id: &str) -> Result<()> {
        let mut s = self.lock_lobby();
        let Some(room) = s.rooms.get_mut(room_id) else {
            return Ok(());
        };
        room.status = RoomStatus::Closed;
        let seq = room.list_seq;
        s.lobby.remove(&(seq, room_id.to_owned()));
        Ok(())
    }

    async fn expire_rooms(
        &self,
        now: Millis,
        retention_ms: Millis,
        max: usize,
    ) -> Result<Vec<String>> {
        let mut s = self.lock_lobby();
        // Rooms whose retention is over go, with their codes.
        while let Some((at, id)) = s.room_forget.first().cloned() {
            if at > now {
                break;
            }
            s.room_forget.remove(&(at, id.clone()));
            if let Some(room) = s.rooms.remove(&id) {
                s.codes.remove(&room.code);
            }
        }
        let mut closed = Vec::new();
        for _ in 0..max {
            let Some((at, id)) = s.room_expiry.first().cloned() else {
                break;
            };
            if at > now {
                break;
            }
            s.room_expiry.remove(&(at, id.clone()));
            let Some(room) = s.rooms.get_mut(&id) else {
                continue;
            };
            if room.status != RoomStatus::Open {
                continue;
            }
            room.status = RoomStatus::Closed;
            let seq = room.list_seq;
            s.lobby.remove(&(seq, id.clone()));
            s.room_forget.insert((now + retention_ms, id.clone()));
            closed.push(id);
        }
        Ok(closed)
    }

    async fn set_player_room(&self, user_id: &str, room_id: &str, _ttl_ms: Millis) -> Result<()> {
        let mut s = self.lock_lobby();
        s.player_rooms
            .insert(user_id.to_owned(), room_id.to_owned());
        Ok(())
    }

    async fn player_room(&self, user_id: &str) -> Result<Option<String>> {
        Ok(self.lock_lobby().player_rooms.get(user_id).cloned())
    }

    async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage> {
        let s = self.lock_lobby();
        let mut rooms = Vec::new();
        let mut last = after;
        for (scanned, (seq, id)) in s.lobby.range((after + 1, String::new())..).enumerate() {
            if rooms.len() >= limit || scanned >= scan_cap {
                break;
            }
            last = *seq;
            let room = &s.rooms[id];
            if filter.matches(room) {
                rooms.push(room.clone());
            }
        }
        let more = s.lobby.range((last + 1, String::new())..).next().is_some();
        Ok(LobbyPage {
            rooms,
            next: more.then_some(last),
        })
    }

    async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32> {
        Ok(*self
            .lock_lobby()
            .guesses
            .get(&(user_id.to_owned(), bucket))
            .unwrap_or(&0))
    }

    async fn add_wrong_code(&self, user_id: &str, bucket: i64, _ttl_ms: Millis) -> Result<u32> {
        let mut s = self.lock_lobby();
        // Older buckets are never read again.
        s.guesses.retain(|(_, b), _| *b >= bucket - 1);
        let n = s.guesses.entry((user_id.to_owned(), bucket)).or_insert(0);
        *n += 1;
        Ok(*n)
    }

    async fn note_invite(&self, user_id: &str, room_id: &str, _ttl_ms: Millis) -> Result<()> {
        // Kept for the process's life: a room id is never reused.
        self.lock_lobby()
            .invites
            .insert((user_id.to_owned(), room_id.to_owned()));
        Ok(())
    }

    async fn invited(&self, user_id: &str, room_id: &str) -> Result<bool> {
        Ok(self
            .lock_lobby()
            .invites
            .contains(&(user_id.to_owned(), room_id.to_owned())))
    }
}
