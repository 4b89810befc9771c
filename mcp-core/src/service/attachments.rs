//! Values attached to one request for a layer below to read, by type: [`Attachments`].

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// One value, shared by every clone of the options that carry it.
type Entry = Arc<dyn Any + Send + Sync>;

/// Values attached to one request, at most one per type: what `http::Extensions` is to an HTTP
/// request (renamed: an MCP "extension" is a protocol extension), written by hand rather than
/// taking an HTTP crate into the core. A layer's per-request choice (e.g. `mcp-tasks`' "hand back
/// the task") then needs no field in [`RequestOptions`](super::RequestOptions). Empty costs
/// nothing; cloning shares the values (a retry's replay carries them as they are).
#[derive(Clone, Default)]
pub struct Attachments {
    entries: Option<Arc<Vec<Entry>>>,
}

impl Attachments {
    /// No values.
    pub fn new() -> Self {
        Attachments::default()
    }

    /// Attaches `value`, replacing a value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let entries = Arc::make_mut(self.entries.get_or_insert_with(Default::default));
        entries.retain(|entry| !(**entry).is::<T>());
        entries.push(Arc::new(value));
    }

    /// The value of type `T`, if one is attached.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.entries
            .as_deref()?
            .iter()
            .find_map(|entry| (**entry).downcast_ref::<T>())
    }
}

impl fmt::Debug for Attachments {
    /// The number of values only: their types are not printable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.entries.as_deref().map_or(0, Vec::len);
        f.debug_struct("Attachments")
            .field("values", &count)
            .finish()
    }
}
