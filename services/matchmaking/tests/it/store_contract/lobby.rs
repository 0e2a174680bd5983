//! The lobby's contract ([`LobbyStore`]): rooms, seats, join codes, the public listing,
//! expiry, CreateRoom's idempotency, wrong codes and invites.

use std::sync::Arc;

use basra_engine::Settings;
use basra_testkit::matchmaking::T0;
use matchmaking::{
    clock::Millis,
    store::{LobbyFilter, LobbyStore, Occupant, RoomRecord, RoomStatus, TakeSeat},
};

pub(super) fn room(
    id: &str,
    code: &str,
    public: bool,
    seats: u8,
    target: u32,
    ranked: bool,
) -> RoomRecord {
    let settings = Settings {
        seats: if seats == 4 {
            basra_engine::Seats::Four
        } else {
            basra_engine::Seats::Two
        },
        target_score: target,
        ..Settings::default()
    };
    let mut occupants = vec![Occupant::Player {
        user_id: format!("owner-{id}"),
        guest: false,
        rating: None,
    }];
    occupants.resize(usize::from(seats), Occupant::Open);
    RoomRecord {
        id: id.into(),
        owner: format!("owner-{id}"),
        settings,
        ranked,
        public,
        code: code.into(),
        created_ms: T0,
        expires_ms: 0,
        seats: occupants,
        status: RoomStatus::Open,
        list_seq: 0,
    }
}

/// Rooms nobody fills in time are closed: unlisted, seats refused, and their keys go
/// after the retention; a full room, a room with a later expiry and one without any
/// are left alone.
pub(super) async fn rooms_nobody_joins_expire(store: Arc<dyn LobbyStore>) {
    let s = &*store;
    let with_expiry = |id: &str, code: &str, expires_ms: Millis| RoomRecord {
        expires_ms,
        ..room(id, code, true, 2, 101, false)
    };
    for (id, code, expires) in [
        ("soon", "SSSSSS", T0 + 1_000),
        ("filled", "FFFFFF", T0 + 1_000),
        ("later", "LLLLLL", T0 + 60_000),
        ("never", "NNNNNN", 0),
    ] {
        assert!(s.claim_code(code, id).await.unwrap());
        s.insert_room(&with_expiry(id, code, expires))
            .await
            .unwrap();
    }
    assert_eq!(
        s.take_seat("filled", "guest-1", false, None).await.unwrap(),
        TakeSeat::Seated {
            seat: 1,
            full: true
        }
    );
    let stored = s.room("soon").await.unwrap().unwrap();
    assert_eq!(
        stored.expires_ms,
        T0 + 1_000,
        "the expiry is kept with the room"
    );
    let retention = 300;
    assert!(
        s.expire_rooms(T0 + 999, retention, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.expire_rooms(T0 + 1_000, retention, 100).await.unwrap(),
        vec!["soon".to_owned()]
    );
    let listed: Vec<String> = s
        .list_public(LobbyFilter::default(), 0, 100, 1000)
        .await
        .unwrap()
        .rooms
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, vec!["later", "never"]);
    assert_eq!(
        s.room("soon").await.unwrap().unwrap().status,
        RoomStatus::Closed
    );
    assert_eq!(
        s.room("filled").await.unwrap().unwrap().status,
        RoomStatus::Full
    );
    assert_eq!(
        s.take_seat("soon", "late-guest", false, None)
            .await
            .unwrap(),
        TakeSeat::Closed
    );
    assert_eq!(
        s.room_by_code("SSSSSS").await.unwrap().as_deref(),
        Some("soon"),
        "the code still finds it during the retention"
    );
    // Expiring again does nothing more.
    assert!(
        s.expire_rooms(T0 + 2_000, retention, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // After the retention its keys are gone (Redis: real time; memory: the next sweep).
    tokio::time::sleep(std::time::Duration::from_millis(retention as u64 + 200)).await;
    assert!(
        s.expire_rooms(T0 + 2_000 + retention, retention, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.room("soon").await.unwrap(), None);
    assert_eq!(s.room_by_code("SSSSSS").await.unwrap(), None);
    assert_eq!(
        s.take_seat("soon", "late-guest", false, None)
            .await
            .unwrap(),
        TakeSeat::NotFound
    );
    // The others are still there.
    for id in ["filled", "later", "never"] {
        assert!(s.room(id).await.unwrap().is_some(), "{id}");
    }
}

pub(super) async fn rooms_seats_codes_and_lobby(store: Arc<dyn LobbyStore>) {
    let s = &*store;
    assert!(s.claim_code("AAAAAA", "r1").await.unwrap());
    assert!(!s.claim_code("AAAAAA", "r2").await.unwrap());
    s.insert_room(&room("r1", "AAAAAA", true, 2, 101, false))
        .await
        .unwrap();
    s.claim_code("BBBBBB", "r2").await.unwrap();
    s.insert_room(&room("r2", "BBBBBB", false, 2, 101, false))
        .await
        .unwrap();
    s.claim_code("CCCCCC", "r3").await.unwrap();
    s.insert_room(&room("r3", "CCCCCC", true, 4, 51, true))
        .await
        .unwrap();
    for i in 0..5 {
        s.insert_room(&room(
            &format!("p{i}"),
            &format!("P{i}PPPP"),
            true,
            2,
            101,
            false,
        ))
        .await
        .unwrap();
    }
    assert_eq!(
        s.room_by_code("BBBBBB").await.unwrap().as_deref(),
        Some("r2")
    );
    let r = s.room("r3").await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.seats.len(), r.ranked),
        (RoomStatus::Open, 4, true)
    );

    // Lobby: public only, oldest first, filters, pages.
    let all = s
        .list_public(LobbyFilter::default(), 0, 100, 1000)
        .await
        .unwrap();
    let names: Vec<_> = all.rooms.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(names, vec!["r1", "r3", "p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(all.next, None);
    let four = LobbyFilter {
        seats: Some(4),
        ..Default::default()
    };
    let page = s.list_public(four, 0, 100, 1000).await.unwrap();
    assert_eq!(page.rooms.len(), 1);
    assert_eq!(page.rooms[0].id, "r3");
    let ranked = LobbyFilter {
        ranked: Some(false),
        target_score: Some(101),
        ..Default::default()
    };
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let page = s.list_public(ranked, after, 2, 1000).await.unwrap();
        seen.extend(page.rooms.iter().map(|r| r.id.clone()));
        match page.next {
            Some(n) => after = n,
            None => break,
        }
    }
    assert_eq!(seen, vec!["r1", "p0", "p1", "p2", "p3", "p4"]);
    // Small pages without a filter, over two modes: every room once, in lobby order.
    let mut seen = Vec::new();
    let mut after = 0;
    loop {
        let page = s
            .list_public(LobbyFilter::default(), after, 2, 1000)
            .await
            .unwrap();
        assert!(page.rooms.len() <= 2, "{page:?}");
        seen.extend(page.rooms.iter().map(|r| r.id.clone()));
        match page.next {
            Some(n) => after = n,
            None => break,
        }
    }
    assert_eq!(seen, names);

    // Seats: idempotent, preferred, full leaves the lobby; the code still finds the room.
    assert_eq!(
        s.take_seat("r3", "x", false, Some(7)).await.unwrap(),
        TakeSeat::NoSuchSeat
    );
    assert_eq!(
        s.take_seat("r3", "x", false, Some(2)).await.unwrap(),
        TakeSeat::Seated {
            seat: 2,
            full: false
        }
    );
    assert_eq!(
        s.take_seat("r3", "y", false, Some(2)).await.unwrap(),
        TakeSeat::SeatTaken
    );
    assert_eq!(
        s.take_seat("r3", "x", false, None).await.unwrap(),
        TakeSeat::Already { seat: 2 }
    );
    assert_eq!(
        s.take_seat("r3", "y", true, None).await.unwrap(),
        TakeSeat::Seated {
            seat: 1,
            full: false
        }
    );
    assert_eq!(
        s.take_seat("r3", "z", false, None).await.unwrap(),
        TakeSeat::Seated {
            seat: 3,
            full: true
        }
    );
    assert_eq!(
        s.take_seat("r3", "w", false, None).await.unwrap(),
        TakeSeat::Full
    );
    assert_eq!(
        s.room_by_code("CCCCCC").await.unwrap().as_deref(),
        Some("r3")
    );
    let r = s.room("r3").await.unwrap().unwrap();
    assert_eq!(r.status, RoomStatus::Full);
    assert_eq!(
        r.seats[1],
        Occupant::Player {
            user_id: "y".into(),
            guest: true,
            rating: None
        }
    );
    let page = s.list_public(four, 0, 100, 1000).await.unwrap();
    assert!(page.rooms.is_empty());
    // Undoing a seat (game-session refused) reopens and relists.
    s.free_seat("r3", 3, "z").await.unwrap();
    assert_eq!(
        s.room_by_code("CCCCCC").await.unwrap().as_deref(),
        Some("r3")
    );
    assert_eq!(
        s.list_public(four, 0, 100, 1000).await.unwrap().rooms.len(),
        1
    );
    // Closing.
    s.close_room("r1").await.unwrap();
    assert_eq!(
        s.room_by_code("AAAAAA").await.unwrap().as_deref(),
        Some("r1")
    );
    assert!(!s.claim_code("AAAAAA", "r9").await.unwrap());
    assert_eq!(
        s.take_seat("r1", "q", false, None).await.unwrap(),
        TakeSeat::Closed
    );
    assert_eq!(
        s.take_seat("nope", "q", false, None).await.unwrap(),
        TakeSeat::NotFound
    );
    // A scan cap ends a page early, with a token to go on.
    let page = s
        .list_public(LobbyFilter::default(), 0, 100, 2)
        .await
        .unwrap();
    assert_eq!(page.rooms.len(), 2);
    assert!(page.next.is_some());
}

pub(super) async fn requests_and_wrong_codes(store: Arc<dyn LobbyStore>) {
    let s = &*store;
    assert_eq!(
        s.claim_request("u", "req", "room-1").await.unwrap(),
        "room-1"
    );
    assert_eq!(
        s.claim_request("u", "req", "room-2").await.unwrap(),
        "room-1"
    );
    assert_eq!(
        s.claim_request("v", "req", "room-3").await.unwrap(),
        "room-3"
    );
    assert_eq!(s.wrong_codes("u", 7).await.unwrap(), 0);
    assert_eq!(s.add_wrong_code("u", 7, 60_000).await.unwrap(), 1);
    assert_eq!(s.add_wrong_code("u", 7, 60_000).await.unwrap(), 2);
    assert_eq!(s.wrong_codes("u", 7).await.unwrap(), 2);
    assert_eq!(s.wrong_codes("u", 8).await.unwrap(), 0);
    assert_eq!(s.wrong_codes("v", 7).await.unwrap(), 0);
}

pub(super) async fn invites_are_noted_per_account_and_room(store: Arc<dyn LobbyStore>) {
    let s = &*store;
    assert!(!s.invited("u", "room-1").await.unwrap());
    s.note_invite("u", "room-1", 60_000).await.unwrap();
    s.note_invite("u", "room-1", 60_000).await.unwrap();
    assert!(s.invited("u", "room-1").await.unwrap());
    assert!(!s.invited("u", "room-2").await.unwrap(), "another room");
    assert!(!s.invited("v", "room-1").await.unwrap(), "another account");
}
