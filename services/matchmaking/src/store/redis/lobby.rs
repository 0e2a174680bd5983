//! The lobby in Redis: rooms, public listing, join codes, CreateRoom idempotency and
//! wrong-code counters. Every key is in the slot of the hash tag `{lobby}`; each script
//! below is one atomic step on that slot (see the key table in [`super`]).

use redis::AsyncCommands as _;

use basra_platform::redis::{Connection, Script};

use super::{b, corrupt};
use crate::{
    clock::Millis,
    error::Result,
    store::{LobbyFilter, LobbyPage, RoomRecord, RoomStatus, TakeSeat},
};

/// A lobby script: the shared helpers, then its body.
fn script(body: &str) -> Script {
    Script::new(&format!("{}\n{body}", include_str!("lobby/prelude.lua")))
}

/// The lobby's scripts, loaded once.
#[derive(Debug)]
struct Scripts {
    insert_room: Script,
    take_seat: Script,
    free_seat: Script,
    close_room: Script,
    list: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            insert_room: script(include_str!("lobby/insert_room.lua")),
            take_seat: script(include_str!("lobby/take_seat.lua")),
            free_seat: script(include_str!("lobby/free_seat.lua")),
            close_room: script(include_str!("lobby/close_room.lua")),
            list: script(include_str!("lobby/list.lua")),
        }
    }
}

/// The lobby: rooms under `P:{lobby}`.
#[derive(Debug)]
pub(super) struct Lobby {
    conn: Connection,
    /// `P:{lobby}`: the key every script is called with and the start of every lobby key.
    slot: String,
    scripts: Scripts,
}

impl Lobby {
    pub(super) fn new(conn: Connection, slot: String) -> Lobby {
        Lobby {
            conn,
            slot,
            scripts: Scripts::new(),
        }
    }

    fn conn(&self) -> Connection {
        self.conn.clone()
    }

    pub(super) async fn claim_request(
        &self,
        user_id: &str,
        request_id: &str,
        room_id: &str,
    ) -> Result<String> {
        let key = format!("{}:req:{user_id}:{request_id}", self.slot);
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

    pub(super) async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool> {
        let key = format!("{}:code:{code}", self.slot);
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(room_id)
            .arg("NX")
            .query_async(&mut self.conn())
            .await?;
        Ok(set.is_some())
    }

    pub(super) async fn insert_room(&self, room: &RoomRecord) -> Result<()> {
        let _: i64 = self
            .scripts
            .insert_room
            .key(&self.slot)
            .arg(&room.id)
            .arg(serde_json::to_string(room)?)
            .arg(serde_json::to_string(&room.seats)?)
            .arg(room.settings.seat_count())
            .arg(room.settings.target_score)
            .arg(b(room.ranked))
            .arg(b(room.public))
            .arg(&room.code)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    pub(super) async fn room(&self, id: &str) -> Result<Option<RoomRecord>> {
        let key = format!("{}:room:{id}", self.slot);
        let f: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&key)
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

    pub(super) async fn room_by_code(&self, code: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .get(format!("{}:code:{code}", self.slot))
            .await?)
    }

    pub(super) async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat> {
        let out: Vec<String> = self
            .scripts
            .take_seat
            .key(&self.slot)
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

    pub(super) async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()> {
        let _: i64 = self
            .scripts
            .free_seat
            .key(&self.slot)
            .arg(room_id)
            .arg(seat)
            .arg(user_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    pub(super) async fn close_room(&self, room_id: &str) -> Result<()> {
        let _: i64 = self
            .scripts
            .close_room
            .key(&self.slot)
            .arg(room_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    pub(super) async fn set_player_room(
        &self,
        user_id: &str,
        room_id: &str,
        ttl_ms: Millis,
    ) -> Result<()> {
        let key = format!("{}:at:{user_id}", self.slot);
        let _: () = self
            .conn()
            .pset_ex(key, room_id, ttl_ms.max(1) as u64)
            .await?;
        Ok(())
    }

    pub(super) async fn player_room(&self, user_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .get(format!("{}:at:{user_id}", self.slot))
            .await?)
    }

    pub(super) async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage> {
        let out: Vec<String> = self
            .scripts
            .list
            .key(&self.slot)
            .arg(after)
            .arg(limit)
            .arg(scan_cap)
            .arg(filter.seats.map(|s| s.to_string()).unwrap_or_default())
            .arg(
                filter
                    .target_score
                    .map(|t| t.to_string())
                    .unwrap_or_default(),
            )
            .arg(filter.ranked.map(|r| b(r).to_owned()).unwrap_or_default())
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

    pub(super) async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32> {
        let n: Option<u32> = self
            .conn()
            .get(format!("{}:guess:{user_id}:{bucket}", self.slot))
            .await?;
        Ok(n.unwrap_or(0))
    }

    pub(super) async fn add_wrong_code(
        &self,
        user_id: &str,
        bucket: i64,
        ttl_ms: Millis,
    ) -> Result<u32> {
        let key = format!("{}:guess:{user_id}:{bucket}", self.slot);
        let (n,): (u32,) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .pexpire(&key, ttl_ms)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(n)
    }
}

fn parse_room(meta: &str, seats: &str, status: &str, seq: &str) -> Result<RoomRecord> {
    let mut room: RoomRecord = serde_json::from_str(meta)?;
    room.seats = serde_json::from_str(seats)?;
    room.status = RoomStatus::parse(status);
    room.list_seq = seq.parse().unwrap_or(0);
    Ok(room)
}
