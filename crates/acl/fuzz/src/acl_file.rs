//! The ACL file reader (`ACL LOAD`, `aclfile` at startup): any text is
//! refused with Redis's errors or loads users whose file, written again
//! (`ACL SAVE`), loads to the same text; every user's description rebuilds
//! it. Both settings of `acl-pubsub-default` are tried, since it changes
//! what a fresh selector holds and so what the rules mean.

use kvik_acl::{Defaults, Users};

use crate::round_trip::{describable, rebuild};

/// Panics when a property of the ACL file reader is broken for `data`.
pub fn check(data: &[u8]) {
    for all_channels in [false, true] {
        let defaults = Defaults { all_channels };
        let Ok(users) = Users::from_file(data, "fuzz.acl", defaults) else { continue };
        assert!(users.get(b"default").is_some(), "a loaded file has a default user");
        for user in users.iter() {
            rebuild(user, defaults);
        }
        if !users.iter().all(|u| describable(u)) {
            continue;
        }
        let text = users.to_file();
        let again = Users::from_file(&text, "fuzz.acl", defaults)
            .unwrap_or_else(|e| panic!("{:?} saved, refused: {e}", String::from_utf8_lossy(&text)));
        assert_eq!(again.len(), users.len(), "saved and loaded, the same users");
        assert_eq!(
            String::from_utf8_lossy(&again.to_file()),
            String::from_utf8_lossy(&text),
            "saved and loaded, saved the same"
        );
    }
}
