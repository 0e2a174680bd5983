//! The short form of the `tokens` fuzz target (fuzz/fuzz_targets/tokens.rs): arbitrary
//! text never verifies, and a real token with bytes changed either fails or still names
//! exactly the caller it was issued for.

use std::sync::OnceLock;
use std::time::Duration;

use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer, TokenVerifier};
use proptest::prelude::*;
use uuid::Uuid;

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
            user_id: Uuid::now_v7(),
            role: Role::Player,
            guest: true,
        };
        let token = issuer
            .issue(&caller, Duration::from_secs(3600))
            .unwrap()
            .token;
        Fixture {
            verifier: issuer.verifier(),
            token,
            caller,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn arbitrary_text_never_verifies(text in ".{0,400}") {
        prop_assume!(text != fixture().token);
        prop_assert!(fixture().verifier.verify(&text).is_err());
    }

    #[test]
    fn token_shaped_text_never_verifies(
        parts in proptest::collection::vec("[A-Za-z0-9_-]{0,120}", 3),
    ) {
        let text = parts.join(".");
        prop_assert!(fixture().verifier.verify(&text).is_err());
    }

    #[test]
    fn a_changed_token_fails_or_names_the_same_caller(
        edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..6),
    ) {
        let fixture = fixture();
        let mut bytes = fixture.token.clone().into_bytes();
        for (at, byte) in edits {
            let at = usize::from(at) % bytes.len();
            bytes[at] = byte;
        }
        if let Ok(text) = String::from_utf8(bytes)
            && let Ok(caller) = fixture.verifier.verify(&text)
        {
            prop_assert_eq!(caller, fixture.caller.clone());
        }
    }
}
