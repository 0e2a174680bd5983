//! Every client-facing request decoded from arbitrary bytes, then checked the way the
//! services check them (cards, rule settings): nothing panics, and what passes the checks
//! is in range.
#![no_main]

use basra_proto::basra::{accounts::v1 as accounts, game::v1 as game, matchmaking::v1 as mm};
use basra_proto::convert::{card_from_pb, settings_from_pb};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fn check_settings(settings: Option<&basra_proto::basra::common::v1::RuleSettings>) {
    if let Ok(checked) = settings_from_pb(settings) {
        assert!(
            checked.validate().is_ok(),
            "accepted settings are valid: {checked:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    match kind % 8 {
        0 => {
            if let Ok(message) = game::PlayRequest::decode(bytes)
                && let Some(game::play_request::Kind::PlayCard(play)) = message.kind
            {
                if let Some(card) = play.card.as_ref() {
                    let _ = card_from_pb(card);
                }
                for card in play.capture_choice.iter().flat_map(|t| &t.cards) {
                    let _ = card_from_pb(card);
                }
            }
        }
        1 => {
            if let Ok(request) = mm::CreateRoomRequest::decode(bytes) {
                check_settings(request.settings.as_ref());
            }
        }
        2 => {
            let _ = mm::FindMatchRequest::decode(bytes);
        }
        3 => {
            let _ = mm::JoinRoomRequest::decode(bytes);
        }
        4 => {
            let _ = mm::ListPublicRoomsRequest::decode(bytes);
        }
        5 => {
            let _ = accounts::RegisterRequest::decode(bytes);
            let _ = accounts::LoginRequest::decode(bytes);
        }
        6 => {
            if let Ok(request) = accounts::RecordMatchRequest::decode(bytes)
                && let Some(record) = request.record
            {
                check_settings(record.settings.as_ref());
            }
        }
        _ => {
            if let Ok(request) = game::CreateRoomRequest::decode(bytes) {
                check_settings(request.settings.as_ref());
            }
        }
    }
});
