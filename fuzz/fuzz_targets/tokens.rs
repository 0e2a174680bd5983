//! Access token parsing and verification: arbitrary text never verifies, and a real token
//! with bytes changed either fails or still names exactly the caller it was issued for.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer, TokenVerifier};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    verifier: TokenVerifier,
    token: String,
    caller: Caller,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let issuer = TokenIssuer::new(SigningKey::generate(), "basra-accounts", "basra");
        let caller = Caller {
            user_id: uuid::Uuid::now_v7(),
            role: Role::Player,
            guest: true,
        };
        let token = issuer.issue(&caller, Duration::from_secs(3600)).unwrap().token;
        Fixture {
            verifier: issuer.verifier(),
            token,
            caller,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        // Any text: only the real token itself may verify.
        if let Ok(text) = std::str::from_utf8(rest)
            && text != fixture.token
        {
            assert!(fixture.verifier.verify(text).is_err(), "{text:?} verified");
        }
        return;
    }
    // The real token with bytes overwritten: (position: u16, byte) triples.
    let mut bytes = fixture.token.clone().into_bytes();
    for edit in rest.chunks_exact(3) {
        let at = usize::from(u16::from_le_bytes([edit[0], edit[1]])) % bytes.len();
        bytes[at] = edit[2];
    }
    if let Ok(text) = String::from_utf8(bytes)
        && let Ok(caller) = fixture.verifier.verify(&text)
    {
        assert_eq!(caller, fixture.caller, "a changed token named someone else");
    }
});
