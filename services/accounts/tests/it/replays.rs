//! GetReplay through the service (both stores): a player's finished match move by move
//! as a spectator saw it, the analysis of their plays (pending, then ready and kept),
//! others' event matches and matches that allowed spectators replayed as a spectator (no
//! analysis), and the documented statuses: a private match only by its players.

use crate::grpc::{failure, register};
use crate::helpers::{TestApp, authed, test_settings};
use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::game::v1::play_response::Event as E;
use basra_records::MatchRecord;
use basra_records::corpus::{Corpus, CorpusOptions, Player, policy_of};
use tonic::Code;
use uuid::Uuid;

on_both_stores! {
    cases {
        a_player_replays_their_match_with_its_analysis,
        anyone_replays_an_event_match_or_one_that_allowed_spectators,
        replay_statuses,
    }
}

/// The app with cheap analyses (`worlds`), waiting `wait_ms` for one.
async fn app<S: Store>(store: S, wait_ms: &str) -> TestApp<S> {
    let settings = test_settings(&[
        ("BASRA_ANALYSIS__WORLDS", "4"),
        ("BASRA_ANALYSIS__WAIT_MS", wait_ms),
    ]);
    TestApp::builder(store).settings(settings).spawn().await
}

/// Four registered players and a recorded match of theirs (with at least two humans).
async fn a_recorded_match<S: Store>(app: &TestApp<S>) -> (Vec<pb::AuthTokens>, MatchRecord) {
    let mut players = Vec::new();
    for name in ["amira", "badr", "chadi", "dalia"] {
        players.push(register(app, name).await);
    }
    let corpus_players = players
        .iter()
        .enumerate()
        .map(|(i, p)| Player {
            user_id: Uuid::parse_str(&p.user_id).unwrap(),
            policy: policy_of(i),
        })
        .collect();
    let options = CorpusOptions {
        seed: 3,
        days: 1,
        until: chrono::Utc::now(),
    };
    let mut corpus = Corpus::new(corpus_players, options);
    let record = loop {
        let record = MatchRecord::from_proto(corpus.next_record()).unwrap();
        if record.seats.len() == 2 && record.players().count() == 2 {
            break record;
        }
    };
    app.store()
        .record_match(&record, chrono::Utc::now())
        .await
        .unwrap();
    (players, record)
}

async fn a_player_replays_their_match_with_its_analysis<S: Store>(store: S) {
    let app = app(store, "0").await;
    let mut client = app.client().await;
    let (players, record) = a_recorded_match(&app).await;
    let (seat, user) = record.players().next().unwrap();
    let token = &players
        .iter()
        .find(|p| p.user_id == user.to_string())
        .unwrap()
        .access_token;
    let request = |with_analysis| pb::GetReplayRequest {
        match_id: record.match_id.clone(),
        with_analysis,
    };
    let replay = client
        .get_replay(authed(request(false), token))
        .await
        .unwrap()
        .into_inner();
    assert!(replay.analysis.is_none());
    let summary = replay.summary.unwrap();
    assert_eq!(
        (summary.match_id.as_str(), summary.your_seat),
        (record.match_id.as_str(), u32::from(seat.seat))
    );
    assert_eq!(
        replay.events,
        basra_records::spectator::replay(&record).unwrap()
    );
    assert!(matches!(replay.events[0].event, Some(E::MatchStarted(_))));
    assert!(replay.events.iter().all(|e| match &e.event {
        Some(E::HandDealt(deal)) => deal.cards.is_empty(),
        _ => true,
    }));

    // The analysis: pending at first (the call waits 0 ms), then ready and kept.
    let first = client
        .get_replay(authed(request(true), token))
        .await
        .unwrap()
        .into_inner()
        .analysis
        .unwrap();
    assert!(first.plays.is_empty());
    let mut ready = None;
    for _ in 0..200 {
        let analysis = client
            .get_replay(authed(request(true), token))
            .await
            .unwrap()
            .into_inner()
            .analysis
            .unwrap();
        if analysis.state == pb::AnalysisState::Ready as i32 {
            ready = Some(analysis);
            break;
        }
        assert_eq!(analysis.state, pb::AnalysisState::Pending as i32);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let ready = ready.expect("the analysis is ready within 10 s");
    assert_eq!(ready.seat, u32::from(seat.seat));
    assert_eq!(
        (
            ready.inaccuracy_from,
            ready.mistake_from,
            ready.blunder_from
        ),
        (1.5, 4.0, 8.0)
    );
    let own_plays = record
        .actions
        .iter()
        .filter(|a| {
            a.seat == seat.seat
                && !a.automatic
                && matches!(a.action, basra_records::ActionKind::Play { .. })
        })
        .count();
    assert_eq!(ready.plays.len(), own_plays);
    for verdict in &ready.plays {
        let Some(E::CardPlayed(played)) = &replay.events[verdict.seq as usize - 1].event else {
            panic!("a verdict's seq names a played card");
        };
        assert_eq!(played.seat, u32::from(seat.seat));
        assert_eq!(played.card, verdict.played);
        assert!(verdict.expected_loss >= 0.0);
        assert_ne!(verdict.quality, pb::PlayQuality::Unspecified as i32);
    }
    let kept = app
        .store()
        .match_analysis(&record.match_id, seat.seat, 4)
        .await
        .unwrap()
        .expect("the analysis is kept");
    assert_eq!(kept.len(), own_plays);
    let again = client
        .get_replay(authed(request(true), token))
        .await
        .unwrap()
        .into_inner()
        .analysis
        .unwrap();
    assert_eq!(again, ready);
}

async fn anyone_replays_an_event_match_or_one_that_allowed_spectators<S: Store>(store: S) {
    let app = app(store, "3000").await;
    let mut client = app.client().await;
    let (players, record) = a_recorded_match(&app).await;
    let outsider = players
        .iter()
        .find(|p| !record.players().any(|(_, id)| id.to_string() == p.user_id))
        .unwrap();
    let player = players
        .iter()
        .find(|p| record.players().any(|(_, id)| id.to_string() == p.user_id))
        .unwrap();
    // The same match three more times: in an event, in a room that allowed spectators,
    // and in one that allowed them in an event.
    let mut kept = Vec::new();
    for (suffix, event_id, allow_spectators) in [
        ("event", Some("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), false),
        ("watched", None, true),
        ("both", Some("e-2"), true),
    ] {
        let mut public = record.clone();
        public.match_id = format!("{}-{suffix}", record.match_id);
        public.event_id = event_id.map(str::to_owned);
        public.allow_spectators = allow_spectators;
        app.store()
            .record_match(&public, chrono::Utc::now())
            .await
            .unwrap();
        let stored = app
            .store()
            .recorded_match(&public.match_id)
            .await
            .unwrap()
            .expect("recorded");
        assert_eq!(
            (stored.event_id.as_deref(), stored.allow_spectators),
            (event_id, allow_spectators),
            "the store keeps who may replay"
        );
        kept.push(public);
    }
    for public in &kept {
        let expected = basra_records::spectator::replay(public).unwrap();
        let request = pb::GetReplayRequest {
            match_id: public.match_id.clone(),
            with_analysis: true,
        };
        let replay = client
            .get_replay(authed(request.clone(), &outsider.access_token))
            .await
            .unwrap()
            .into_inner();
        assert!(replay.spectator, "{}", public.match_id);
        assert!(replay.analysis.is_none(), "no analysis for an outsider");
        assert_eq!(replay.events, expected, "what its spectators saw");
        let summary = replay.summary.unwrap();
        assert_eq!(summary.match_id, public.match_id);
        assert_eq!((summary.your_seat, summary.your_rating_change), (0, None));
        assert_eq!(summary.seats.len(), record.seats.len());
        // Its player replays it as their own, with the analysis.
        let own = client
            .get_replay(authed(request, &player.access_token))
            .await
            .unwrap()
            .into_inner();
        assert!(!own.spectator);
        assert!(own.analysis.is_some());
    }
    // Nothing was analysed for the outsider: no seat of theirs.
    for seat in 0..2 {
        for public in &kept {
            let analysed = app
                .store()
                .match_analysis(&public.match_id, seat, 4)
                .await
                .unwrap();
            let theirs = record
                .players()
                .any(|(s, id)| s.seat == seat && id.to_string() == player.user_id);
            assert!(analysed.is_none() || theirs);
        }
    }
    // The private match, for comparison: its players only.
    let (code, message) = failure(
        client
            .get_replay(authed(
                pb::GetReplayRequest {
                    match_id: record.match_id.clone(),
                    with_analysis: false,
                },
                &outsider.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied, "{message}");
    assert!(message.contains("only its players"), "{message}");
}

async fn replay_statuses<S: Store>(store: S) {
    let app = app(store, "3000").await;
    let mut client = app.client().await;
    let (players, record) = a_recorded_match(&app).await;
    let outsider = players
        .iter()
        .find(|p| !record.players().any(|(_, id)| id.to_string() == p.user_id))
        .unwrap();
    let replay = |match_id: &str| pb::GetReplayRequest {
        match_id: match_id.into(),
        with_analysis: true,
    };
    for (match_id, token, code) in [
        (
            record.match_id.as_str(),
            &outsider.access_token,
            Code::PermissionDenied,
        ),
        ("no-such-match", &players[0].access_token, Code::NotFound),
        ("", &players[0].access_token, Code::InvalidArgument),
        (
            &*"m".repeat(65),
            &players[0].access_token,
            Code::InvalidArgument,
        ),
    ] {
        let (got, message) = failure(client.get_replay(authed(replay(match_id), token)).await);
        assert_eq!(got, code, "{match_id}: {message}");
    }
    let (code, _) = failure(
        client
            .get_replay(authed(replay(&record.match_id), &app.service_token()))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, _) = failure(client.get_replay(replay(&record.match_id)).await);
    assert_eq!(code, Code::Unauthenticated);
    // The outsider's refusal left nothing behind.
    assert!(
        app.store()
            .match_analysis(&record.match_id, 0, 100)
            .await
            .unwrap()
            .is_none()
    );
}
