//! The short form of the `client_messages` fuzz target (`fuzz/`): every client-facing
//! request decoded from arbitrary bytes, then put through the conversions the services
//! check requests with. Nothing panics, and rule settings that pass are valid.

use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::{accounts::v1 as accounts, game::v1 as game, matchmaking::v1 as mm};
use basra_proto::convert::{card_from_pb, settings_from_pb};
use proptest::prelude::*;
use prost::Message;

fn check_settings(settings: Option<&RuleSettings>) {
    if let Ok(checked) = settings_from_pb(settings) {
        assert!(
            checked.validate().is_ok(),
            "accepted settings are valid: {checked:?}"
        );
    }
}

fn check(bytes: &[u8]) {
    if let Ok(message) = game::PlayRequest::decode(bytes)
        && let Some(game::play_request::Kind::PlayCard(play)) = message.kind
    {
        for card in play
            .card
            .iter()
            .chain(play.capture_choice.iter().flat_map(|c| &c.cards))
        {
            let _ = card_from_pb(card);
        }
    }
    if let Ok(request) = mm::CreateRoomRequest::decode(bytes) {
        check_settings(request.settings.as_ref());
    }
    if let Ok(request) = game::CreateRoomRequest::decode(bytes) {
        check_settings(request.settings.as_ref());
    }
    if let Ok(request) = accounts::RecordMatchRequest::decode(bytes)
        && let Some(record) = request.record
    {
        check_settings(record.settings.as_ref());
    }
    let _ = mm::FindMatchRequest::decode(bytes);
    let _ = mm::JoinRoomRequest::decode(bytes);
    let _ = mm::ListPublicRoomsRequest::decode(bytes);
    let _ = accounts::RegisterRequest::decode(bytes);
    let _ = accounts::LoginRequest::decode(bytes);
}

/// Well-formed settings with any values, encoded: the decoder always succeeds, so the
/// conversion itself is what gets exercised.
fn settings_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::option::of(any::<u32>()),
        prop::option::of(any::<u32>()),
        prop::option::of(any::<i32>()),
        prop::option::of(any::<i32>()),
        prop::option::of(any::<u32>()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(seats, target, komi, tie, points, partial)| {
            mm::CreateRoomRequest {
                settings: Some(RuleSettings {
                    seats,
                    target_score: target,
                    komi_basra: komi,
                    majority_tie: tie,
                    majority_points: points,
                    allow_partial_capture: partial,
                    ..Default::default()
                }),
                ..Default::default()
            }
            .encode_to_vec()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn any_bytes_decode_and_check_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check(&bytes);
    }

    #[test]
    fn any_settings_values_are_refused_or_valid(bytes in settings_bytes()) {
        check(&bytes);
    }
}
