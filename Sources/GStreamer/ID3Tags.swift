import CGStreamer
import Foundation

/// An MP3 file's ID3 tags as GStreamer reads them (libgsttag: what id3demux, and so the discoverer, uses): ID3v2 of
/// every version, unsynchronised or not, with numeric genres spelt out and user texts mapped, and ID3v1 at the end,
/// merged as id3demux merges them (ID3v2's values first).
public enum ID3Tags {
    /// The tags of `v2` (a whole ID3v2 tag, header included) and `v1` (a file's last 128 bytes, an ID3v1 tag), either
    /// may be nil: what MediaInfo holds of them, without a duration; nil when neither holds a tag.
    public static func read(v2: [UInt8]?, v1: [UInt8]?) -> MediaInfo? {
        GStreamer.initialize()
        let end = v1.flatMap { bytes in bytes.count == 128 ? bytes.withUnsafeBufferPointer { gst_tag_list_new_from_id3v1($0.baseAddress) } : nil }
        let start = v2.flatMap { bytes -> UnsafeMutablePointer<GstTagList>? in
            guard let buffer = bytes.withUnsafeBytes({ gst_buffer_new_memdup($0.baseAddress, gsize($0.count)) }) else { return nil }
            defer { gst_buffer_unref(buffer) }
            return gst_tag_list_from_id3v2_tag(buffer)
        }
        defer {
            if let end { gst_tag_list_unref(end) }
            if let start { gst_tag_list_unref(start) }
        }
        guard start != nil || end != nil else { return nil }
        // id3demux merges in REPLACE mode, the less important (ID3v1) first.
        guard let merged = gst_tag_list_merge(end, start, GST_TAG_MERGE_REPLACE) else { return nil }
        defer { gst_tag_list_unref(merged) }
        return TagReader(lists: [UnsafePointer(merged)]).mediaInfo
    }
}
