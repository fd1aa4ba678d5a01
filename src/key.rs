// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! How a NIXL OBJ registration names its DAOS dkey.

use std::sync::Arc;

/// The bytes of one NIXL key, used as the DAOS dkey. Cheap to clone: requests copy it at
/// prep time so the registration may be deregistered while I/O is in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey(Arc<[u8]>);

impl ObjectKey {
    /// NIXL's rule (as in its OBJ plugin): `metaInfo`, or the decimal `devId` when empty. The one
    /// implementation of it: registerMem and queryMem (through the C ABI) both come here.
    pub fn from_registration(meta: &[u8], dev_id: u64) -> ObjectKey {
        if meta.is_empty() {
            ObjectKey(dev_id.to_string().into_bytes().into())
        } else {
            ObjectKey(meta.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// For logs and error messages.
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_wins_dev_id_fallback() {
        assert_eq!(ObjectKey::from_registration(b"obj_1_abcd", 7).as_bytes(), b"obj_1_abcd");
        assert_eq!(ObjectKey::from_registration(b"", 12345).as_bytes(), b"12345");
        assert_eq!(ObjectKey::from_registration(b"", u64::MAX).display(), "18446744073709551615");
        assert_eq!(ObjectKey::from_registration(b"", 0).as_bytes(), b"0");
    }
}
