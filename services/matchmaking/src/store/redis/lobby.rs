//! The lobby in Redis: rooms, public listing, join codes, CreateRoom idempotency and
//! wrong-code counters. Each mode (a [`Format`]: ranked or not, seats, target) is its own
//! slot, `{lb:F}`, holding its rooms and its public list, so the lobby spreads over a
//! cluster's primaries like the queue; each script below is one atomic step on one mode's
//! slot. A room id finds its mode through a locator (`{rm:ID}`), a join code its room
//! through `{code:C}`; a global counter (`{lb}:seq`) orders the public rooms of every
//! mode, and a registry (`{lb}:modes`) lets a listing without a full filter merge the
//! modes' pages. Per-account keys (idempotency, wrong codes, last room) live in the
//! account's slot `{pl:A}`. The key table is in [`super`].

use redis::AsyncCommands as _;

use basra_platform::redis::Script;

use super::{RedisStore, b, corrupt};
use crate::{
    clock::Millis,
    domain::Format,
    error::Result,
    store::lobby::{LobbyFilter, LobbyPage, LobbyStore, RoomRecord, RoomStatus, TakeSeat},
};

/// A lobby script: the shared helpers, then its body.
fn script(body: &str) -> Script {
    Script::new(&format!("{}\n{body}", include_str!("lobby/prelude.lua")))
}

/// The lobby's scripts, loaded once.
#[derive(Debug)]
pub(super) struct Scripts {
    insert_room: Script,
    take_seat: Script,
    free_seat: Script,
    close_room: Script,
    expire_rooms: Script,
    list: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            insert_room: script(include_str!("lobby/insert_room.lua")),
            take_seat: script(include_str!("lobby/take_seat.lua")),
            free_seat: script(include_str!("lobby/free_seat.lua")),
            close_room: script(include_str!("lobby/close_room.lua")),
            expire_rooms: script(include_str!("lobby/expire_rooms.lua")),
            list: script(include_str!("lobby/list.lua")),
        }
    }
}

impl RedisStore {
    /// `P:{lb:F}`: the mode's slot, the key its scripts are called with.
    fn mode_slot(&self, mode: Format) -> String {
        self.keys.slot(&format!("lb:{}", mode.key()))
    }

    /// `P:{rm:ID}:mode`: the room's mode, written before the room.
    fn room_locator(&self, room_id: &str) -> String {
        self.keys.key(&format!("rm:{room_id}"), "mode")
    }

    /// `P:{pl:A}:name`: a key of the account's slot.
    fn account_key(&self, user_id: &str, name: &str) -> String {
        self.keys.key(&format!("pl:{user_id}"), name)
    }

    /// The slot of a room's mode, or `None` for an unknown room: remembered (a room made
    /// or looked up by this process), else from its locator. Room ids are fresh UUIDs and
    /// a room's mode never changes, so the memory is never wrong; a room gone since reads
    /// as unknown in its slot as it would at its locator.
    async fn room_slot(&self, room_id: &str) -> Result<Option<String>> {
        if let Some(mode) = self.room_modes.get(room_id) {
            return Ok(Some(self.mode_slot(mode)));
        }
        let mode: Option<String> = self.conn().get(self.room_locator(room_id)).await?;
        mode.map(|m| {
            let mode = Format::parse(&m).ok_or_else(|| corrupt("room mode"))?;
            self.room_modes.remember(room_id, mode);
            Ok(self.mode_slot(mode))
        })
        .transpose()
    }

    fn code_key(&self, code: &str) -> String {
        self.keys.key(&format!("code:{code}"), "room")
    }

    /// `P:{lb}:modes`: every mode a room was made in.
    fn modes_registry(&self) -> String {
        self.keys.key("lb", "modes")
    }

    /// One mode's public rooms after `after`, at most `limit`.
    async fn list_mode(&self, mode: Format, after: u64, limit: usize) -> Result<LobbyPage> {
        let out: Vec<String> = self
            .lobby_scripts
            .list
            .key(self.mode_slot(mode))
            .arg(after)
            .arg(limit)
            .invoke_async(&mut self.conn())
            .await?;
        let next = out
            .first()
            .filter(|s| !s.is_empty())
            .and_then(|s| s.parse().ok());
        let rooms = out
            .get(1..)
            .unwrap_or_default()
            .chunks(4)
            .filter(|c| c.len() == 4)
            .map(|c| parse_room(&c[0], &c[1], &c[2], &c[3]))
            .collect::<Result<_>>()?;
        Ok(LobbyPage { rooms, next })
    }
}

#[tonic::async_trait]
impl LobbyStore for RedisStore {
    async fn claim_request(
        &self,
        user_id: &str,
        request_id: &str,
        room_id: &str,
    ) -> Result<String> {
        let key = self.account_key(user_id, &format!("req:{request_id}"));
        let mut conn = self.conn();
        // A day is far longer than any client retries.
        let (existing,): (String,) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(&key)
            .arg(room_id)
            .arg("NX")
            .arg("PX")
            .arg(86_400_000)
            .ignore()
            .get(&key)
            .query_async(&mut conn)
            .await?;
        Ok(existing)
    }

    async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool> {
        let set: Option<String> = redis::cmd("SET")
            .arg(self.code_key(code))
            .arg(room_id)
            .arg("NX")
            .query_async(&mut self.conn())
            .await?;
        Ok(set.is_some())
    }

    /// Steps each atomic in its slot: the mode joins the registry and the room's locator
    /// names the mode (with, for a public room, a fresh lobby sequence number: the three
    /// sent at once, one round trip), then the room goes into the mode's slot. A crash
    /// before the last leaves at most a mode with no room (listed as empty) or a locator
    /// with no room (the room is not found, as it was never made).
    async fn insert_room(&self, room: &RoomRecord) -> Result<()> {
        let mode = room.format();
        let mut conn = self.conn();
        let (mut registry, mut locator, mut sequence) = (self.conn(), self.conn(), self.conn());
        let (registered, located, seq) = tokio::join!(
            registry.sadd::<_, _, ()>(self.modes_registry(), mode.key()),
            locator.set::<_, _, ()>(self.room_locator(&room.id), mode.key()),
            async {
                if room.public {
                    sequence
                        .incr::<_, _, u64>(self.keys.key("lb", "seq"), 1)
                        .await
                } else {
                    Ok(0)
                }
            }
        );
        registered?;
        located?;
        let seq = seq?;
        let _: i64 = self
            .lobby_scripts
            .insert_room
            .key(self.mode_slot(mode))
            .arg(&room.id)
            .arg(serde_json::to_string(room)?)
            .arg(serde_json::to_string(&room.seats)?)
            .arg(b(room.public))
            .arg(seq)
            .arg(room.expires_ms)
            .invoke_async(&mut conn)
            .await?;
        self.room_modes.remember(&room.id, mode);
        Ok(())
    }

    async fn room(&self, id: &str) -> Result<Option<RoomRecord>> {
        let Some(slot) = self.room_slot(id).await? else {
            return Ok(None);
        };
        let f: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(format!("{slot}:room:{id}"))
            .arg(&["meta", "seats", "status", "seq"])
            .query_async(&mut self.conn())
            .await?;
        match f.as_slice() {
            [Some(meta), Some(seats), Some(status), seq] => Ok(Some(parse_room(
                meta,
                seats,
                status,
                seq.as_deref().unwrap_or("0"),
            )?)),
            _ => Ok(None),
        }
    }

    async fn room_by_code(&self, code: &str) -> Result<Option<String>> {
        Ok(self.conn().get(self.code_key(code)).await?)
    }

    async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat> {
        let Some(slot) = self.room_slot(room_id).await? else {
            return Ok(TakeSeat::NotFound);
        };
        let out: Vec<String> = self
            .lobby_scripts
            .take_seat
            .key(slot)
            .arg(room_id)
            .arg(user_id)
            .arg(b(guest))
            .arg(preferred.map_or(-1, i64::from))
            .invoke_async(&mut self.conn())
            .await?;
        let seat = || -> Result<u32> {
            out.get(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupt("seat"))
        };
        Ok(match out.first().map(String::as_str) {
            Some("seated") => TakeSeat::Seated {
                seat: seat()?,
                full: out.get(2).map(String::as_str) == Some("1"),
            },
            Some("already") => TakeSeat::Already { seat: seat()? },
            Some("full") => TakeSeat::Full,
            Some("closed") => TakeSeat::Closed,
            Some("taken") => TakeSeat::SeatTaken,
            Some("nosuchseat") => TakeSeat::NoSuchSeat,
            _ => TakeSeat::NotFound,
        })
    }

    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()> {
        let Some(slot) = self.room_slot(room_id).await? else {
            return Ok(());
        };
        let _: i64 = self
            .lobby_scripts
            .free_seat
            .key(slot)
            .arg(room_id)
            .arg(seat)
            .arg(user_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn close_room(&self, room_id: &str) -> Result<()> {
        let Some(slot) = self.room_slot(room_id).await? else {
            return Ok(());
        };
        let _: i64 = self
            .lobby_scripts
            .close_room
            .key(slot)
            .arg(room_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// Each mode's due rooms, one script on the mode's slot (see `expire_rooms.lua`);
    /// then the locator and code keys of the rooms closed get the same retention. A
    /// crash in between leaves those two keys behind (a locator without a room reads as
    /// no room).
    async fn expire_rooms(
        &self,
        now: Millis,
        retention_ms: Millis,
        max: usize,
    ) -> Result<Vec<String>> {
        let names: Vec<String> = self.conn().smembers(self.modes_registry()).await?;
        let mut modes: Vec<Format> = names.iter().filter_map(|n| Format::parse(n)).collect();
        modes.sort_by_key(Format::key);
        let mut closed = Vec::new();
        for mode in modes {
            let left = max.saturating_sub(closed.len());
            if left == 0 {
                break;
            }
            let out: Vec<String> = self
                .lobby_scripts
                .expire_rooms
                .key(self.mode_slot(mode))
                .arg(now)
                .arg(retention_ms)
                .arg(left)
                .invoke_async(&mut self.conn())
                .await?;
            for pair in out.chunks(2) {
                let [id, code] = pair else {
                    return Err(corrupt("expire_rooms"));
                };
                let mut conn = self.conn();
                let _: bool = conn.pexpire(self.room_locator(id), retention_ms).await?;
                let _: bool = conn.pexpire(self.code_key(code), retention_ms).await?;
                closed.push(id.clone());
            }
        }
        Ok(closed)
    }

    async fn set_player_room(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()> {
        let key = self.account_key(user_id, "at");
        let _: () = self
            .conn()
            .pset_ex(key, room_id, ttl_ms.max(1) as u64)
            .await?;
        Ok(())
    }

    async fn player_room(&self, user_id: &str) -> Result<Option<String>> {
        Ok(self.conn().get(self.account_key(user_id, "at")).await?)
    }

    /// A page of the public rooms of every mode `filter` covers, oldest first: each
    /// mode's page (one script on its slot), merged by lobby sequence. A mode that has
    /// more rooms than it returned cuts the merged page at its last one, so no room is
    /// skipped; the page holds at most `min(limit, scan_cap)` rooms.
    async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage> {
        let limit = limit.min(scan_cap).max(1);
        let modes = match filter.format() {
            Some(mode) => vec![mode],
            None => {
                let names: Vec<String> = self.conn().smembers(self.modes_registry()).await?;
                names
                    .iter()
                    .filter_map(|name| Format::parse(name))
                    .filter(|&mode| filter.covers(mode))
                    .collect()
            }
        };
        let mut rooms = Vec::new();
        // The lowest sequence number up to which every mode has been read whole.
        let mut complete_to = u64::MAX;
        for mode in modes {
            let page = self.list_mode(mode, after, limit).await?;
            if let Some(next) = page.next {
                complete_to = complete_to.min(next);
            }
            rooms.extend(page.rooms);
        }
        rooms.sort_by_key(|room| room.list_seq);
        let readable = rooms.partition_point(|room| room.list_seq <= complete_to);
        let more = readable > limit || readable < rooms.len() || complete_to != u64::MAX;
        rooms.truncate(readable.min(limit));
        let next = more
            .then(|| rooms.last().map(|room| room.list_seq))
            .flatten();
        Ok(LobbyPage { rooms, next })
    }

    async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32> {
        let n: Option<u32> = self
            .conn()
            .get(self.account_key(user_id, &format!("guess:{bucket}")))
            .await?;
        Ok(n.unwrap_or(0))
    }

    async fn add_wrong_code(&self, user_id: &str, bucket: i64, ttl_ms: Millis) -> Result<u32> {
        let key = self.account_key(user_id, &format!("guess:{bucket}"));
        let (n,): (u32,) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .pexpire(&key, ttl_ms)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(n)
    }

    async fn note_invite(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()> {
        let key = self.account_key(user_id, &format!("inv:{room_id}"));
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(1)
            .arg("PX")
            .arg(ttl_ms.max(1))
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn invited(&self, user_id: &str, room_id: &str) -> Result<bool> {
        let key = self.account_key(user_id, &format!("inv:{room_id}"));
        let n: u32 = self.conn().exists(key).await?;
        Ok(n > 0)
    }
}

fn parse_room(meta: &str, seats: &str, status: &str, seq: &str) -> Result<RoomRecord> {
    let mut room: RoomRecord = serde_json::from_str(meta)?;
    room.seats = serde_json::from_str(seats)?;
    room.status = RoomStatus::parse(status);
    room.list_seq = seq.parse().unwrap_or(0);
    Ok(room)
}
