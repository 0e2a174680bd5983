//! The engine under any sequence of actions, legal or not: nothing panics, a refused action
//! leaves the game exactly as it was, and the cards in play always add up to one deck.
#![no_main]

use basra_engine::{
    Action, Card, CardSet, Game, KomiBasra, MajorityTie, Seat, Seats, Seed, Settings,
};
use libfuzzer_sys::fuzz_target;

fn settings(bits: u8) -> Settings {
    Settings {
        seats: if bits & 1 == 0 {
            Seats::Two
        } else {
            Seats::Four
        },
        allow_partial_capture: bits & 2 != 0,
        clean_start_table: bits & 4 != 0,
        last_card_basra: bits & 8 != 0,
        card_points: bits & 16 != 0,
        komi_basra: match (bits >> 5) % 3 {
            0 => KomiBasra::AnyValue,
            1 => KomiBasra::SumAtMost10,
            _ => KomiBasra::SingleCard,
        },
        majority_tie: match (bits >> 7) & 1 {
            0 => MajorityTie::Nobody,
            _ => MajorityTie::CarryOver,
        },
        target_score: 31,
        ..Settings::default()
    }
}

fn card(index: u8) -> Card {
    Card::all().nth(usize::from(index % 52)).expect("52 cards")
}

fn check_conservation(game: &Game) {
    let view = game.view(None);
    if view.result.is_some() {
        return;
    }
    let in_hands: usize = view.hand_sizes.iter().map(|&n| usize::from(n)).sum();
    let piles: usize = view.pile_sizes.iter().map(|&n| usize::from(n)).sum();
    let total = in_hands + view.table.len() + piles + usize::from(view.deck_left);
    assert_eq!(total, 52, "cards in play: {view:?}");
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 33 {
        return;
    }
    let seed = Seed(data[..32].try_into().expect("32 bytes"));
    let Ok((mut game, _)) = Game::new(settings(data[32]), seed) else {
        return;
    };
    for chunk in data[33..].chunks_exact(3) {
        let action = match chunk[0] % 8 {
            // A resignation, from any seat (an illegal seat is refused).
            0 => Action::Resign {
                seat: Seat(chunk[1] % 5),
            },
            // A legal card of the player to move, naming a capture from the table bits.
            1..=5 => {
                let legal = game.legal_plays();
                let Some(play) = legal.get(usize::from(chunk[1]) % legal.len().max(1)) else {
                    continue;
                };
                let view = game.view(None);
                let take = (chunk[0] & 8 != 0).then(|| {
                    view.table
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| chunk[2] >> (i % 8) & 1 == 1)
                        .map(|(_, c)| *c)
                        .collect::<CardSet>()
                });
                Action::Play {
                    seat: view.turn.unwrap_or(Seat(0)),
                    card: play.card,
                    take,
                }
            }
            // Anything at all: any seat, any card, any named set.
            _ => Action::Play {
                seat: Seat(chunk[1] % 5),
                card: card(chunk[2]),
                take: (chunk[1] & 0x80 != 0).then(|| {
                    [chunk[0], chunk[1], chunk[2]]
                        .iter()
                        .map(|&b| card(b))
                        .collect()
                }),
            },
        };
        let before = game.clone();
        if game.apply(&action).is_err() {
            assert_eq!(game, before, "a refused {action:?} changed the game");
        }
        check_conservation(&game);
    }
});
