//! The client's model follows the event stream, and typed commands become the right messages.

use basra::player::{Command, command};
use basra::table::Table;
use basra_engine::{Card, CardSet};
use basra_proto::basra::common::v1::GameView;
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::basra::game::v1::{CardPlayed, HandDealt, PlayResponse, Snapshot, TurnStarted};
use basra_proto::convert::{card_to_pb, cards_to_pb};

fn cards(text: &str) -> Vec<Card> {
    text.split_whitespace()
        .map(|c| c.parse().unwrap())
        .collect()
}

fn event(seq: u64, event: Event) -> PlayResponse {
    PlayResponse {
        seq,
        server_time: None,
        event: Some(event),
    }
}

fn joined() -> Table {
    let mut table = Table::default();
    let view = GameView {
        your_seat: Some(0),
        hand: cards_to_pb(cards("8S KD 2C JH")),
        hand_counts: vec![4, 4],
        table: cards_to_pb(cards("AS 7H KC 8D")),
        pile_sizes: vec![0, 0],
        totals: vec![12, 30],
        turn: Some(0),
        deck_remaining: 40,
        ..GameView::default()
    };
    table
        .apply(&event(
            5,
            Event::Snapshot(Box::new(Snapshot { view: Some(view) })),
        ))
        .unwrap();
    table
}

#[test]
fn a_snapshot_then_plays_keep_the_model_in_step() {
    let mut table = joined();
    assert_eq!(table.last_seq, Some(5));
    assert!(table.my_turn());
    // What each card would take is computed for the player: 8S takes AS 7H 8D.
    let eight = table
        .plays()
        .into_iter()
        .find(|p| p.card == cards("8S")[0])
        .unwrap();
    assert_eq!(
        eight.capture.taken,
        cards("AS 7H 8D").into_iter().collect::<CardSet>()
    );
    let played = CardPlayed {
        seat: 0,
        card: Some(card_to_pb(cards("8S")[0])),
        taken: cards_to_pb(cards("AS 7H 8D")),
        ..CardPlayed::default()
    };
    table
        .apply(&event(6, Event::CardPlayed(played.clone())))
        .unwrap();
    assert_eq!(table.table, cards("KC"));
    assert_eq!(table.piles, [4, 0]);
    assert!(!table.hand.contains(cards("8S")[0]));
    assert_eq!(table.hand_counts, [3, 4]);
    // A repeated event (a resumed stream overlapping) changes nothing.
    table.apply(&event(6, Event::CardPlayed(played))).unwrap();
    assert_eq!(table.piles, [4, 0]);
    table
        .apply(&event(
            7,
            Event::TurnStarted(TurnStarted {
                seat: 1,
                deadline: None,
            }),
        ))
        .unwrap();
    assert!(!table.my_turn());
    let other = CardPlayed {
        seat: 1,
        card: Some(card_to_pb(cards("5H")[0])),
        ..CardPlayed::default()
    };
    table.apply(&event(8, Event::CardPlayed(other))).unwrap();
    assert_eq!(table.table, cards("KC 5H"));
    assert_eq!(table.last_seq, Some(8));
}

#[test]
fn a_deal_adds_only_our_cards() {
    let mut table = joined();
    let dealt = HandDealt {
        cards: cards_to_pb(cards("3C 4C")),
        hand_counts: vec![6, 4],
        deck_remaining: 32,
    };
    table.apply(&event(6, Event::HandDealt(dealt))).unwrap();
    assert_eq!(table.hand.len(), 6);
    assert_eq!(table.deck_remaining, 32);
}

#[test]
fn typed_commands_become_plays_with_the_sequence_they_saw() {
    let table = joined();
    let Command::Send(message) = command(&table, "8s") else {
        panic!("a card in hand is a play");
    };
    let Some(Kind::PlayCard(play)) = message.kind else {
        panic!("a play message");
    };
    assert_eq!(play.card, Some(card_to_pb(cards("8S")[0])));
    assert_eq!(play.based_on_seq, Some(5));
    assert!(play.capture_choice.is_none());
    assert!(!play.client_move_id.is_empty());
    let Command::Send(message) = command(&table, "1 take AS 7H") else {
        panic!("a numbered card with a capture is a play");
    };
    let Some(Kind::PlayCard(play)) = message.kind else {
        panic!("a play message");
    };
    assert_eq!(play.card, Some(card_to_pb(table.hand.nth(0).unwrap())));
    assert_eq!(
        play.capture_choice.unwrap().cards,
        cards_to_pb(cards("AS 7H"))
    );
    assert!(
        matches!(command(&table, "9H"), Command::Show(_)),
        "not in hand"
    );
    assert!(matches!(command(&table, "8S take ZZ"), Command::Show(_)));
    assert!(matches!(command(&table, "resign"), Command::Send(_)));
    assert!(matches!(
        command(&table, "chat nice basra"),
        Command::Send(_)
    ));
    assert!(matches!(command(&table, "chat whatever"), Command::Show(_)));
    assert!(matches!(command(&table, "quit"), Command::Quit));
}
