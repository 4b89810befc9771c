//! The binary content the conformance scenarios ask for, base64-encoded.

/// A 1×1 red PNG (RGBA), 70 bytes.
pub(super) const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file of 1 ms of silence (8 kHz, mono, 8-bit PCM: 8 samples), 52 bytes.
pub(super) const SILENT_WAV: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// An image content item with [`RED_PIXEL_PNG`].
pub(super) fn image_content() -> serde_json::Value {
    serde_json::json!({ "type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png" })
}
