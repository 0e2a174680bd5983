//! A small knockout played to its final between browsers (issue 47): `basra dev` (in-memory
//! stores) serves the built page (`make web`); an operator creates a three-player knockout
//! through `EventAdminService` (check-in open from now, the start 45 s ahead, matches to
//! 1); `clients/web/tests/browser_events.ts` drives three Chromium pages (one in Arabic)
//! through playwright-core: each finds the event in the Tournaments tab, registers and
//! checks in; at the start the two unseeded players get "your match is ready" and join
//! with one tap, the winner meets the seed in the final; every page ends on the final
//! standings with the champion and both rounds of the bracket. While the final is played,
//! the page of the player knocked out in round 1 is reloaded and opens the event again:
//! its bracket draws round 1 with its result and winner (WatchEvent's first message
//! carries the earlier rounds). The event's standings,
//! asked of the server afterwards, name the same champion. Then a finalist opens the
//! final's Replay from their match history and goes through it with Play, Pause and
//! Step: the plays it shows and the final score are those of the match as accounts
//! recorded it (its export, asked by an operator). The seed, who had a bye in round 1,
//! opens round 1's match from the event's bracket with its Replay button and steps
//! through it: the match id the pairing names, the plays and the final score are those
//! of round 1 as accounts recorded it.
//! Screenshots are kept in `$CARGO_TARGET_TMPDIR/web-events` (the path is printed).
//!
//! Needs what every browser suite needs (`web.rs`: Node.js, Debian's `chromium`, the built
//! page, `npm ci` in `clients/web`); fails, never skips, without them.

use basra::admin_player::PlayerAdmin;
use basra::admin_tournament::EventAdmin;
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1 as pb;

use crate::web::WebDev;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_play_a_knockout_to_its_final() {
    let dev = WebDev::start(&[], None).await;
    let token = dev.operator_token("web-events-test");
    let server = dev.server();
    let admin = EventAdmin::connect(&server, &token).await.unwrap();
    let name = "Browser cup";
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 45;
    let event = admin
        .create(
            pb::EventDefinition {
                name: name.into(),
                format: pb::EventFormat::Knockout as i32,
                start_at: Some(basra_proto::convert::timestamp(start as i64 * 1000)),
                registration_opens_seconds_before: 3600,
                cap: 3,
                check_in_seconds: 600,
                join_deadline_seconds: 120,
                settings: Some(RuleSettings {
                    seats: Some(2),
                    target_score: Some(1),
                    ..RuleSettings::default()
                }),
                allow_spectators: true,
                ..Default::default()
            },
            "",
        )
        .await
        .unwrap();

    let event_id = event.event_id.clone();
    let report = dev
        .run("browser_events.ts", "web-events", &[&event_id, name])
        .await;
    let joined: Vec<u64> = report["joined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(joined.iter().sum::<u64>(), 4, "{report}");
    let champion = report["champion"].as_str().expect("a champion").to_owned();
    // The reload in the middle of the knockout drew round 1 with its winner.
    let reload = &report["reload"];
    println!("reloaded mid-knockout: {reload}");
    assert_eq!(reload["status"], "RUNNING", "{reload}");
    assert_eq!(reload["match"]["round"], "1", "{reload}");
    assert_eq!(
        reload["match"]["winners"].as_array().map(Vec::len),
        Some(1),
        "{reload}"
    );

    // The server says the same: finished, the champion the pages named.
    let events = admin.list().await.unwrap();
    let finished = events
        .iter()
        .find(|e| e.event_id == event.event_id)
        .expect("the event is listed");
    assert_eq!(finished.status(), pb::EventStatus::Finished, "{finished:?}");
    assert_eq!(finished.rounds_total, 2, "{finished:?}");
    assert!(!finished.champion.is_empty());
    println!("champion {champion}, history: {}", report["history"]);

    // The final's replay showed the final as recorded: every play, the final score.
    let finalist = report["finalist"].as_str().expect("a finalist").to_owned();
    let players = PlayerAdmin::connect(&server, &token).await.unwrap();
    let found = players.find(&finalist, 5).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let mut export = Vec::new();
    players
        .export(&found[0].user_id, "web-events replay", &mut export)
        .await
        .unwrap();
    let export: serde_json::Value = serde_json::from_slice(&export).unwrap();
    let matches = export["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 2, "the finalist played two matches");
    let plays_of = |m: &serde_json::Value| {
        m["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["action"].get("play").is_some())
            .count() as u64
    };
    let last = &matches[0];
    let plays = plays_of(last);
    let replay = &report["replay"];
    println!(
        "replay: {replay}; recorded: {plays} plays, {}",
        last["final_totals"]
    );
    assert_eq!(replay["plays"].as_u64(), Some(plays), "{replay}");
    assert_eq!(replay["totals"], last["final_totals"], "{replay}");
    assert!(
        replay["pausedAt"].as_u64().unwrap() >= 2,
        "Play went on by itself before Pause: {replay}"
    );

    // Round 1's Replay in the bracket, opened by the seed (no player of it): the match
    // its pairing names is round 1 as recorded, every play and the final score.
    let round1 = &matches[1];
    let bracket = &report["bracketReplay"];
    println!(
        "bracket replay by {}: {bracket}; recorded: {} plays, {}",
        report["seed"],
        plays_of(round1),
        round1["final_totals"]
    );
    assert_eq!(bracket["matchId"], round1["match_id"], "{bracket}");
    assert_eq!(
        bracket["plays"].as_u64(),
        Some(plays_of(round1)),
        "{bracket}"
    );
    assert_eq!(bracket["totals"], round1["final_totals"], "{bracket}");
    dev.stop().await;
}
