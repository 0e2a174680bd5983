//! What an event scenario checks once its event has ended, from what the players saw,
//! what was watched in Redis (the lease) and through the API (the rounds), and what the
//! services stored: matchmaking's results (`event_results`) and accounts' match records
//! (`matches`, `match_players`) and notices (`notices`), all in the stack's PostgreSQL.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use basra_proto::basra::matchmaking::v1::event_service_client::EventServiceClient;
use basra_proto::basra::matchmaking::v1::{EventStatus, GetStandingsRequest};
use sqlx::PgPool;

use crate::bots::{self, Player, SeatLog};
use crate::event_players::EventLog;
use crate::events::{Fault, Format, holder_pid};
use crate::report::Row;
use crate::scenarios;

/// Everything a scenario saw of its event.
pub struct Observed {
    /// The event.
    pub event: String,
    /// Its format.
    pub format: Format,
    /// Every player registered (user ids).
    pub players: Vec<String>,
    /// What each player did.
    pub logs: Vec<EventLog>,
    /// The current round as GetEvent gave it, each change once, in order.
    pub rounds: Vec<u32>,
    /// The lease's holder (`None`: none), each change once, with its wall time (ms).
    pub leases: Vec<(i64, Option<String>)>,
    /// The match-ready notices seen in accounts' inbox while the event ran: (player,
    /// key).
    pub told: HashSet<(String, String)>,
    /// The faults: what, when (wall ms), and the process killed when it was a driver.
    pub kills: Vec<(Fault, i64, Option<u32>)>,
    /// The process ids of the matchmaking replicas still running.
    pub survivors: Vec<u32>,
    /// The event's start (wall ms).
    pub start_ms: i64,
}

/// One stored result.
#[derive(Debug, Clone, sqlx::FromRow)]
struct EventResult {
    match_key: String,
    room_id: String,
    player_a: String,
    player_b: String,
    winner: Option<String>,
    outcome: String,
    recorded_at_ms: i64,
}

/// One player's seat in one recorded match.
#[derive(Debug, Clone, sqlx::FromRow)]
struct Seat {
    room_id: String,
    match_id: String,
    started_ms: i64,
    ended_ms: i64,
    user_id: String,
    won: bool,
}

/// Runs every check of an event scenario into `row`.
pub async fn check(
    row: &mut Row,
    db: &PgPool,
    o: &Observed,
    probe: &Player,
    matchmakers: &[String],
) -> anyhow::Result<()> {
    players(row, o);
    standings(row, o, probe, matchmakers).await;
    let results: Vec<EventResult> = sqlx::query_as(
        "SELECT match_key, room_id, player_a, player_b, winner, outcome, recorded_at_ms \
         FROM event_results WHERE event_id = $1 ORDER BY seq",
    )
    .bind(&o.event)
    .fetch_all(db)
    .await
    .context("reading the event's results")?;
    row.matches = results.len();
    results_once(row, o, &results);
    match o.format {
        Format::Knockout => knockout_pairings(row, o, &results),
        Format::Arena => arena_pairings(row, o, &results),
    }
    let seats = match_records(row, db, &results).await?;
    timing(row, o, &results, &seats);
    notices(row, o, &results);
    lease(row, o);
    recovery(row, o, &results);
    Ok(())
}

/// The players' side: every match they joined played to its end, with every event once
/// (the fault suite's usual books), and no player stopped early.
fn players(row: &mut Row, o: &Observed) {
    let seats: Vec<SeatLog> = o.logs.iter().flat_map(|l| l.matches.clone()).collect();
    scenarios::tally(row, &seats);
    let mut errors: BTreeMap<String, u32> = BTreeMap::new();
    for log in &o.logs {
        if let Some(failure) = &log.failure {
            row.failures
                .push(format!("player {}: {failure}", log.user_id));
        }
        for code in &log.call_errors {
            *errors.entry(code.clone()).or_default() += 1;
        }
    }
    if o.logs.len() != o.players.len() {
        row.failures.push(format!(
            "{} of {} players' tasks came back",
            o.logs.len(),
            o.players.len()
        ));
    }
    if !errors.is_empty() {
        let listed: Vec<String> = errors.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
        row.notes.push(format!(
            "matchmaking calls failed (and were asked of the other replica): {}",
            listed.join(", ")
        ));
    }
}

/// The event has finished with final standings: every player, each by name.
async fn standings(row: &mut Row, o: &Observed, probe: &Player, matchmakers: &[String]) {
    let mut answer = None;
    for url in matchmakers {
        let Ok(channel) = bots::channel(url) else {
            continue;
        };
        if let Ok(found) = EventServiceClient::new(channel)
            .get_standings(bots::authed(
                GetStandingsRequest {
                    event_id: o.event.clone(),
                },
                &probe.bearer,
            ))
            .await
        {
            answer = Some(found.into_inner());
            break;
        }
    }
    let Some(standings) = answer else {
        row.failures
            .push("GetStandings answered on no matchmaking replica".into());
        return;
    };
    let status = standings.event.as_ref().map(|e| e.status);
    if !standings.r#final || status != Some(EventStatus::Finished as i32) {
        row.failures.push(format!(
            "the standings are not final (final {}, status {status:?})",
            standings.r#final
        ));
    }
    let ranked: HashSet<&str> = standings
        .standings
        .iter()
        .map(|s| s.user_id.as_str())
        .collect();
    let missing = o
        .players
        .iter()
        .filter(|p| !ranked.contains(p.as_str()))
        .count();
    if missing > 0 || standings.standings.len() != o.players.len() {
        row.failures.push(format!(
            "the final standings hold {} rows for {} players ({missing} players missing)",
            standings.standings.len(),
            o.players.len()
        ));
    }
    let unnamed = standings
        .standings
        .iter()
        .filter(|s| s.display_name.is_empty())
        .count();
    if unnamed > 0 {
        row.failures.push(format!(
            "{unnamed} rows of the final standings have no name"
        ));
    }
    if o.format == Format::Knockout {
        let champion = standings
            .event
            .as_ref()
            .map(|e| e.champion.clone())
            .unwrap_or_default();
        if champion.is_empty() || standings.standings.first().map(|s| &s.user_id) != Some(&champion)
        {
            row.failures.push(format!(
                "the champion {champion:?} does not lead the standings"
            ));
        }
    }
}

/// Every result once, each of a match played to its end by both players (the players
/// always join: a forfeit is a player who was never given their match), and every room
/// a player played has its result.
fn results_once(row: &mut Row, o: &Observed, results: &[EventResult]) {
    let mut rooms: HashMap<&str, u32> = HashMap::new();
    for r in results {
        *rooms.entry(r.room_id.as_str()).or_default() += 1;
        if r.outcome != "won" {
            row.failures.push(format!(
                "match {} ended {} ({} vs {})",
                r.match_key, r.outcome, r.player_a, r.player_b
            ));
        }
    }
    for (room, count) in &rooms {
        if *count != 1 {
            row.records_wrong += 1;
            row.failures
                .push(format!("room {room} has {count} results in event_results"));
        }
    }
    for log in &o.logs {
        for seat in &log.matches {
            if !rooms.contains_key(seat.room_id.as_str()) {
                row.records_wrong += 1;
                row.failures.push(format!(
                    "room {} was played by {} but has no result",
                    seat.room_id, log.user_id
                ));
            }
        }
    }
}

fn round_of(key: &str) -> Option<(u32, u32)> {
    let (round, table) = key.strip_prefix('r')?.split_once('t')?;
    Some((round.parse().ok()?, table.parse().ok()?))
}

/// A knockout of 2^k players: round r holds n/2^r matches, its players all different;
/// round 1 every player; round r+1 exactly round r's winners; k rounds in all.
fn knockout_pairings(row: &mut Row, o: &Observed, results: &[EventResult]) {
    let mut by_round: BTreeMap<u32, Vec<&EventResult>> = BTreeMap::new();
    for r in results {
        match round_of(&r.match_key) {
            Some((round, _)) => by_round.entry(round).or_default().push(r),
            None => row
                .failures
                .push(format!("a knockout result keyed {:?}", r.match_key)),
        }
    }
    let n = o.players.len();
    let rounds = n.trailing_zeros();
    if by_round.len() != rounds as usize || by_round.keys().copied().ne(1..=rounds) {
        row.failures.push(format!(
            "results in rounds {:?}; a knockout of {n} has rounds 1 to {rounds}",
            by_round.keys().collect::<Vec<_>>()
        ));
    }
    let mut expected: HashSet<String> = o.players.iter().cloned().collect();
    for (round, matches) in &by_round {
        let mut paired: HashSet<String> = HashSet::new();
        for m in matches {
            for p in [&m.player_a, &m.player_b] {
                if !paired.insert(p.clone()) {
                    row.failures
                        .push(format!("round {round}: player {p} paired twice"));
                }
            }
        }
        let left_out = expected.difference(&paired).count();
        let strangers = paired.difference(&expected).count();
        if left_out > 0 || strangers > 0 {
            row.failures.push(format!(
                "round {round}: {left_out} players left out, {strangers} paired who had no place in it"
            ));
        }
        expected = matches.iter().filter_map(|m| m.winner.clone()).collect();
    }
}

/// An arena: each match between two different players, every player in at least one.
fn arena_pairings(row: &mut Row, o: &Observed, results: &[EventResult]) {
    let mut played: HashSet<&str> = HashSet::new();
    for r in results {
        if r.player_a == r.player_b {
            row.failures.push(format!(
                "match {}: a player paired with themself",
                r.match_key
            ));
        }
        played.insert(&r.player_a);
        played.insert(&r.player_b);
    }
    let left_out = o
        .players
        .iter()
        .filter(|p| !played.contains(p.as_str()))
        .count();
    if left_out > 0 {
        row.failures
            .push(format!("{left_out} arena players were never paired"));
    }
}

/// accounts' records: each result's room recorded once (waiting up to 30 s for the
/// last), with the result's two players and its winner.
async fn match_records(
    row: &mut Row,
    db: &PgPool,
    results: &[EventResult],
) -> anyhow::Result<Vec<Seat>> {
    let rooms: Vec<String> = results.iter().map(|r| r.room_id.clone()).collect();
    let started = Instant::now();
    let seats: Vec<Seat> = loop {
        let seats: Vec<Seat> = sqlx::query_as(
            "SELECT m.room_id, m.match_id, \
               (extract(epoch FROM m.started_at) * 1000)::bigint AS started_ms, \
               (extract(epoch FROM m.ended_at) * 1000)::bigint AS ended_ms, \
               p.user_id::text AS user_id, p.won \
             FROM matches m JOIN match_players p ON p.match_id = m.match_id \
             WHERE m.room_id = ANY($1)",
        )
        .bind(&rooms)
        .fetch_all(db)
        .await
        .context("reading accounts' match records")?;
        let recorded: HashSet<&str> = seats.iter().map(|s| s.room_id.as_str()).collect();
        if recorded.len() == rooms.len() || started.elapsed() > Duration::from_secs(30) {
            break seats;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut by_room: HashMap<&str, Vec<&Seat>> = HashMap::new();
    for seat in &seats {
        by_room.entry(seat.room_id.as_str()).or_default().push(seat);
    }
    for r in results {
        let seats = by_room.get(r.room_id.as_str()).cloned().unwrap_or_default();
        let records: HashSet<&str> = seats.iter().map(|s| s.match_id.as_str()).collect();
        if records.len() != 1 {
            row.records_wrong += 1;
            row.failures.push(format!(
                "room {} recorded {} times in accounts",
                r.room_id,
                records.len()
            ));
            continue;
        }
        let users: HashSet<&str> = seats.iter().map(|s| s.user_id.as_str()).collect();
        let expected: HashSet<&str> = [r.player_a.as_str(), r.player_b.as_str()].into();
        let winner = seats.iter().find(|s| s.won).map(|s| s.user_id.clone());
        if users != expected || winner != r.winner {
            row.records_wrong += 1;
            row.failures.push(format!(
                "room {}: accounts recorded {users:?} won by {winner:?}, the event {expected:?} won by {:?}",
                r.room_id, r.winner
            ));
        }
    }
    Ok(seats)
}

/// In time (accounts' start and end of each match): a knockout round's matches all start
/// after the previous round's last one ended (each round opened once, when the last
/// result was in); an arena player's matches never overlap (never paired while playing).
fn timing(row: &mut Row, o: &Observed, results: &[EventResult], seats: &[Seat]) {
    let span: HashMap<&str, (i64, i64)> = seats
        .iter()
        .map(|s| (s.room_id.as_str(), (s.started_ms, s.ended_ms)))
        .collect();
    match o.format {
        Format::Knockout => {
            let mut rounds: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
            for r in results {
                let (Some((round, _)), Some((start, end))) =
                    (round_of(&r.match_key), span.get(r.room_id.as_str()))
                else {
                    continue;
                };
                let entry = rounds.entry(round).or_insert((i64::MAX, i64::MIN));
                entry.0 = entry.0.min(*start);
                entry.1 = entry.1.max(*end);
            }
            for ((round, (_, last_end)), (_, (next_start, _))) in
                rounds.iter().zip(rounds.iter().skip(1))
            {
                if next_start < last_end {
                    row.failures.push(format!(
                        "round {}'s first match started {} ms before round {round}'s last ended",
                        round + 1,
                        last_end - next_start
                    ));
                }
            }
        }
        Format::Arena => {
            let mut by_player: HashMap<&str, Vec<(i64, i64, &str)>> = HashMap::new();
            for r in results {
                if let Some((start, end)) = span.get(r.room_id.as_str()) {
                    for p in [&r.player_a, &r.player_b] {
                        by_player
                            .entry(p.as_str())
                            .or_default()
                            .push((*start, *end, &r.match_key));
                    }
                }
            }
            for (player, mut spans) in by_player {
                spans.sort_unstable();
                for pair in spans.windows(2) {
                    if pair[1].0 < pair[0].1 {
                        row.failures.push(format!(
                            "player {player} was in {} and {} at once",
                            pair[0].2, pair[1].2
                        ));
                    }
                }
            }
        }
    }
    // The rounds GetEvent showed only ever rose.
    if o.rounds.windows(2).any(|w| w[1] < w[0]) {
        row.failures
            .push(format!("the current round went back: {:?}", o.rounds));
    }
    if o.format == Format::Knockout {
        let rounds = o.players.len().trailing_zeros();
        if o.rounds.last() != Some(&rounds) {
            row.failures.push(format!(
                "the rounds seen were {:?}; the last should be {rounds}",
                o.rounds
            ));
        }
    }
}

/// The match-ready notices in accounts' inbox whose key matches `pattern` (a LIKE
/// pattern): (player, key).
pub async fn told(db: &PgPool, pattern: &str) -> anyhow::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT user_id::text, dedupe_key FROM notices \
         WHERE dedupe_key LIKE $1 AND kind = 'event_match_ready'",
    )
    .bind(pattern)
    .fetch_all(db)
    .await
    .context("reading accounts' notices")
}

/// accounts' inbox: each player had a "your match is ready" notice for each of their
/// matches (kept once per player and room: its key is `event:ID:ROOM:ready`), as seen
/// while the event ran.
fn notices(row: &mut Row, o: &Observed, results: &[EventResult]) {
    let kept = &o.told;
    let mut untold = Vec::new();
    // The players find their matches with GetMyMatch too: a match both played to its end
    // before its notice went out (a notice accounts could not take, told again at the next
    // step, or a driver killed between its save and its telling) is told no more — the
    // clock tells only matches still to be played. Only a player untold of a match they
    // did not play is a broken promise.
    let mut played_first = 0;
    for r in results {
        let key = format!("event:{}:{}:ready", o.event, r.room_id);
        for p in [&r.player_a, &r.player_b] {
            if !kept.contains(&(p.clone(), key.clone())) {
                if r.outcome == "won" {
                    played_first += 1;
                } else {
                    untold.push(format!("{p} of {} ({})", r.match_key, r.outcome));
                }
            }
        }
    }
    if played_first > 0 {
        row.notes.push(format!(
            "{played_first} players played a match to its end before its notice went out (not told after)"
        ));
    }
    row.events += kept.len() as u64;
    if !untold.is_empty() {
        row.failures.push(format!(
            "{} players were never told their match was ready: {}",
            untold.len(),
            untold
                .iter()
                .take(6)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    row.notes.push(format!(
        "{} match-ready notices seen for {} results; events checked include them",
        kept.len(),
        results.len()
    ));
}

/// One driver at a time: the lease passed from one holder to another only after the
/// first was killed, and to a replica still running. Before the start it may also lapse
/// and be taken by the other replica: a replica leases an upcoming event only to tell
/// its players that it starts soon, and nobody holds it from then until its start (the
/// first replica to tick at the start takes it).
fn lease(row: &mut Row, o: &Observed) {
    // Each holder in turn, when it took the lease, and whether the lease was seen free
    // before the start just before it.
    let mut holders: Vec<(i64, &str, bool)> = Vec::new();
    let mut lapsed_before_start = false;
    for (at, holder) in &o.leases {
        match holder {
            None => lapsed_before_start = *at < o.start_ms,
            Some(holder) => {
                if holders.last().is_none_or(|(_, last, _)| last != holder) {
                    holders.push((*at, holder, lapsed_before_start));
                }
                lapsed_before_start = false;
            }
        }
    }
    let since_start = |at: i64| format!("{:+.1} s", (at - o.start_ms) as f64 / 1e3);
    let killed = |holder: &str, by: i64| {
        o.kills.iter().any(|(fault, at, pid)| {
            *fault == Fault::KillDriver && *at <= by && *pid == holder_pid(holder)
        })
    };
    for pair in holders.windows(2) {
        let ((_, from, _), (at, to, lapsed)) = (pair[0], pair[1]);
        if !killed(from, at) && !lapsed {
            row.failures.push(format!(
                "the lease passed from {from} to {to} at {} from the start while {from} \
                 ran (it did not renew it in time: the two replicas drove the event in turn)",
                since_start(at)
            ));
        }
    }
    for (fault, at, pid) in &o.kills {
        if *fault != Fault::KillDriver {
            continue;
        }
        match holders
            .iter()
            .find(|(t, h, _)| t > at && holder_pid(h) != *pid)
        {
            Some((t, h, _)) if holder_pid(h).is_some_and(|p| o.survivors.contains(&p)) => {
                row.notes.push(format!(
                    "the lease was taken over by {h} {:.1} s after the kill",
                    (t - at) as f64 / 1e3
                ));
            }
            Some((_, h, _)) => row.failures.push(format!(
                "after the kill the lease went to {h}, no running replica"
            )),
            None => row
                .failures
                .push("nobody took the lease over after the kill".into()),
        }
    }
    row.notes.push(format!(
        "lease holders in turn (taken, from the start): {}",
        holders
            .iter()
            .map(|(at, h, lapsed)| format!(
                "{}{} at {}",
                if *lapsed {
                    "(lapsed before the start) "
                } else {
                    ""
                },
                h.split('-').take(2).collect::<Vec<_>>().join("-"),
                since_start(*at)
            ))
            .collect::<Vec<_>>()
            .join(" → ")
    ));
}

/// The time to recover: from each kill to the first result recorded after it.
fn recovery(row: &mut Row, o: &Observed, results: &[EventResult]) {
    for (fault, at, _) in &o.kills {
        let next = results
            .iter()
            .map(|r| r.recorded_at_ms)
            .filter(|t| t > at)
            .min();
        match next {
            Some(t) => {
                let took = Duration::from_millis((t - at) as u64);
                row.recover = Some(row.recover.map_or(took, |r| r.max(took)));
                row.notes.push(format!(
                    "{fault:?}: the first result after it recorded {:.1} s later",
                    took.as_secs_f64()
                ));
            }
            None => row
                .failures
                .push(format!("{fault:?}: no result was recorded after it")),
        }
    }
}
