//! The replay of a recorded match ([`basra_records::spectator::replay`]): it plays the
//! whole log again to the record's end, in order, and shows no card a spectator could not
//! see: no hand is ever dealt face up, and every card it shows was on the table or played
//! face up by then.

use basra_engine::{Card, CardSet};
use basra_proto::basra::game::v1::play_response::Event as E;
use basra_proto::convert::card_from_pb;
use basra_records::MatchRecord;
use basra_records::corpus::{Corpus, CorpusOptions, Player, policy_of};
use basra_records::spectator::replay;

fn records(n: usize) -> Vec<MatchRecord> {
    let players = (0..4)
        .map(|i| Player {
            user_id: uuid::Uuid::now_v7(),
            policy: policy_of(i),
        })
        .collect();
    let options = CorpusOptions {
        seed: 11,
        days: 1,
        until: chrono::Utc::now(),
    };
    let mut corpus = Corpus::new(players, options);
    (0..n)
        .map(|_| MatchRecord::from_proto(corpus.next_record()).expect("a valid record"))
        .collect()
}

#[test]
fn a_replay_plays_the_log_to_the_records_end_showing_only_what_spectators_saw() {
    for record in records(12) {
        let events = replay(&record).expect("the record replays");
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
        let mut face_up = CardSet::EMPTY;
        let mut plays = 0;
        for event in &events {
            let shown: Vec<Card> = match event.event.as_ref().unwrap() {
                E::HandDealt(deal) => {
                    assert!(deal.cards.is_empty(), "a hand shown to a spectator");
                    Vec::new()
                }
                E::TableDealt(table) => table
                    .cards
                    .iter()
                    .map(|c| card_from_pb(c).unwrap())
                    .collect(),
                E::CardPlayed(played) => {
                    plays += 1;
                    let card = card_from_pb(played.card.as_ref().unwrap()).unwrap();
                    face_up.insert(card);
                    let taken: Vec<Card> = played
                        .taken
                        .iter()
                        .map(|c| card_from_pb(c).unwrap())
                        .collect();
                    for t in &taken {
                        assert!(face_up.contains(*t), "{t:?} taken before it was seen");
                    }
                    Vec::new()
                }
                E::RoundEnded(ended) => ended
                    .leftover
                    .iter()
                    .map(|c| card_from_pb(c).unwrap())
                    .collect(),
                E::Snapshot(_) | E::Rejected(_) => panic!("not a spectator's event"),
                _ => Vec::new(),
            };
            for card in shown {
                face_up.insert(card);
            }
        }
        let logged_plays = record
            .actions
            .iter()
            .filter(|a| matches!(a.action, basra_records::ActionKind::Play { .. }))
            .count();
        assert_eq!(plays, logged_plays);
        let Some(E::MatchEnded(end)) = events.last().and_then(|e| e.event.clone()) else {
            panic!("the replay ends with the match's end");
        };
        assert_eq!(end.totals, record.final_totals);
        assert_eq!(end.winner_side, record.winner_side.map(u32::from));
        assert_eq!(end.seed, record.seed.to_vec());
    }
}

#[test]
fn a_log_that_does_not_apply_is_refused() {
    let mut record = records(1).remove(0);
    record.actions.swap(0, 1);
    assert!(replay(&record).is_err());
}
