//! A string type for fields that many cached objects hold with the same value ([`IStr`]): the caches point
//! them at one shared copy (the table lives with the caches, outside this crate).

use std::sync::Arc;

/// A string the caches may share between objects (a container's name and image, an image ID, a condition's
/// type and status): reads as a `str`. Decoded into a copy of its own; [`IStr::share`] points it at a copy
/// shared with other objects.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IStr(Option<Arc<str>>);

impl IStr {
    /// A copy of `s`.
    pub fn new(s: &str) -> Self {
        if s.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::from(s)))
        }
    }

    /// Points at the copy `shared` gives for this string.
    pub fn share(&mut self, shared: &mut dyn FnMut(&str) -> Arc<str>) {
        if let Some(s) = &mut self.0 {
            *s = shared(s);
        }
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or_default()
    }
}

impl std::ops::Deref for IStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for IStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for IStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for IStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for IStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for IStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for IStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for IStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<IStr> for str {
    fn eq(&self, other: &IStr) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<IStr> for &str {
    fn eq(&self, other: &IStr) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<IStr> for String {
    fn eq(&self, other: &IStr) -> bool {
        self == other.as_str()
    }
}

impl From<&str> for IStr {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for IStr {
    fn from(s: String) -> Self {
        Self::new(&s)
    }
}

impl From<&String> for IStr {
    fn from(s: &String) -> Self {
        Self::new(s)
    }
}

impl From<IStr> for String {
    fn from(s: IStr) -> Self {
        s.as_str().to_owned()
    }
}

impl serde::Serialize for IStr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for IStr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = IStr;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<IStr, E> {
                Ok(IStr::new(s))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}
