import CGStreamer
import CGStreamerShims
import Foundation

/// Reads duration, tags, cover art and chapters (the TOC) from a media file (GstDiscoverer).
///
/// ```swift
/// do {
///     let info = try Discoverer.discover(url)
/// } catch .notAudio(let why) {
///     print(why)
/// }
/// ```
/// `discover` blocks the calling thread until the file is analysed (tens of milliseconds for a local file, at
/// most `timeout`): call it from a thread or an executor that may block, not from the main actor or the player
/// actor. Calls are independent and may run concurrently.
public enum Discoverer {
    /// Analyses `url` (usually a file URL) and returns what it found.
    /// - Throws: ``MediaError``: `.notFound` (no such file), `.unreadable` (permissions, I/O), `.notAudio` (not a
    ///   media file, or one without an audio stream), `.failed` (timeout, missing plugin, other errors).
    public static func discover(_ url: URL, timeout: Duration = .seconds(5)) throws(MediaError) -> MediaInfo {
        try Reader(timeout: timeout).discover(url)
    }

    /// One GstDiscoverer for many files, read one after another on one thread (the media reader's child): the
    /// discoverer and its uridecodebin are made once, not for each file (making them filters GStreamer's registry,
    /// about a third of the work of reading a small file).
    ///
    /// ```swift
    /// let reader = try Discoverer.Reader(timeout: .seconds(5))
    /// let infos = try urls.map { try reader.discover($0) }
    /// ```
    public final class Reader {
        public let timeout: Duration
        private let discoverer: UnsafeMutablePointer<GstDiscoverer>

        public init(timeout: Duration) throws(MediaError) {
            GStreamer.initialize()
            var error: UnsafeMutablePointer<GError>?
            guard let discoverer = gst_discoverer_new(GstClockTime(max(timeout, .milliseconds(1)).gstNanoseconds), &error) else {
                throw .failed("Cannot create a media discoverer: \(consumeError(error) ?? "unknown error")")
            }
            // Durations as the playbin plays the files (see Playbin: encoder delay and padding).
            lectern_gst_enable_gapless_fixes_in_discoverer(UnsafeMutableRawPointer(discoverer))
            self.discoverer = discoverer
            self.timeout = timeout
        }

        deinit { g_object_unref(UnsafeMutableRawPointer(discoverer)) }

        /// As ``Discoverer/discover(_:timeout:)``, with this reader's timeout.
        public func discover(_ url: URL) throws(MediaError) -> MediaInfo {
            try Discoverer.discover(url, with: discoverer, timeout: timeout)
        }
    }

    private static func discover(_ url: URL, with discoverer: UnsafeMutablePointer<GstDiscoverer>,
                                 timeout: Duration) throws(MediaError) -> MediaInfo {
        let name = url.isFileURL ? url.path(percentEncoded: false) : url.absoluteString
        if url.isFileURL {
            try checkFile(at: name)
        }

        var error: UnsafeMutablePointer<GError>?
        let info = gst_discoverer_discover_uri(discoverer, url.absoluteString, &error)
        defer { if let info { g_object_unref(UnsafeMutableRawPointer(info)) } }
        let errorDomain = error?.pointee.domain
        let errorCode = error?.pointee.code
        let errorMessage = consumeError(error)

        guard let info else {
            throw classify(domain: errorDomain, code: errorCode, message: errorMessage, name: name)
        }
        switch gst_discoverer_info_get_result(info) {
        case GST_DISCOVERER_OK:
            break
        case GST_DISCOVERER_URI_INVALID:
            throw .failed("\(name): not a valid URI")
        case GST_DISCOVERER_TIMEOUT:
            throw .failed("\(name): analysis timed out after \(timeout)")
        case GST_DISCOVERER_MISSING_PLUGINS:
            if !hasAudioStream(info) {
                throw .failed("\(name): no GStreamer plugin to decode it (\(errorMessage ?? "missing plugins"))")
            }
        default:
            throw classify(domain: errorDomain, code: errorCode, message: errorMessage, name: name)
        }

        guard hasAudioStream(info) else {
            throw .notAudio("\(name) has no audio stream")
        }
        return mediaInfo(info)
    }

    // MARK: Checks before GStreamer, for precise messages

    private static func checkFile(at path: String) throws(MediaError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .notFound("No such file: \(path)")
        }
        if isDirectory.boolValue {
            throw .notAudio("\(path) is a directory, not an audio file")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .unreadable("Permission denied: \(path)")
        }
    }

    private static func classify(domain: GQuark?, code: Int32?, message: String?, name: String) -> MediaError {
        let detail = message ?? "unknown error"
        if let domain, let code {
            if domain == gst_stream_error_quark() {
                switch UInt32(code) {
                case GST_STREAM_ERROR_TYPE_NOT_FOUND.rawValue, GST_STREAM_ERROR_WRONG_TYPE.rawValue,
                     GST_STREAM_ERROR_DEMUX.rawValue, GST_STREAM_ERROR_DECODE.rawValue,
                     GST_STREAM_ERROR_CODEC_NOT_FOUND.rawValue, GST_STREAM_ERROR_FORMAT.rawValue:
                    return .notAudio("\(name) is not an audio file (\(detail))")
                default:
                    break
                }
            } else if domain == gst_resource_error_quark() {
                switch UInt32(code) {
                case GST_RESOURCE_ERROR_NOT_FOUND.rawValue:
                    return .notFound("No such file: \(name)")
                case GST_RESOURCE_ERROR_OPEN_READ.rawValue, GST_RESOURCE_ERROR_READ.rawValue,
                     GST_RESOURCE_ERROR_NOT_AUTHORIZED.rawValue, GST_RESOURCE_ERROR_OPEN_READ_WRITE.rawValue:
                    return .unreadable("Cannot read \(name): \(detail)")
                default:
                    break
                }
            }
        }
        return .failed("\(name): \(detail)")
    }

    // MARK: Reading the result

    private static func hasAudioStream(_ info: OpaquePointer) -> Bool {
        guard let list = gst_discoverer_info_get_audio_streams(info) else { return false }
        gst_discoverer_stream_info_list_free(list)
        return true
    }

    private static func mediaInfo(_ info: OpaquePointer) -> MediaInfo {
        let streams = TagLists(info)
        defer { streams.release() }
        let duration = Duration(gstClockTime: gst_discoverer_info_get_duration(info)).flatMap { $0 > .zero ? $0 : nil }
        var media = TagReader(lists: streams.lists).mediaInfo
        media.duration = duration
        media.chapters = chapters(info, duration: duration)
        return media
    }

    // MARK: Chapters, from the table of contents

    /// The chapters of the discoverer's TOC, in time order, each ending where the file says, else where the next
    /// one starts, else (the last one) at `duration`.
    private static func chapters(_ info: OpaquePointer, duration: Duration?) -> [MediaInfo.Chapter] {
        // Borrowed: the TOC belongs to `info`, which outlives this call.
        guard let toc = gst_discoverer_info_get_toc(info) else { return [] }
        var chapters = tocChapters(gst_toc_get_entries(toc), depth: 0)
            .enumerated()
            .sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }
            .map(\.element)
        for index in chapters.indices where chapters[index].end == nil {
            let next = index + 1 < chapters.count ? chapters[index + 1].start : duration
            chapters[index].end = next.flatMap { $0 >= chapters[index].start ? $0 : nil }
        }
        return chapters
    }

    /// The first level of chapter (or track, as FLAC cue sheets give them) entries in `list`; when there is
    /// none, those inside the first alternative (edition, version, angle) or title that holds any. Sub-chapters
    /// are not listed: their parent covers them.
    private static func tocChapters(_ list: UnsafeMutablePointer<GList>?, depth: Int) -> [MediaInfo.Chapter] {
        let entries = tocEntries(list)
        let sequence = entries.filter {
            let type = gst_toc_entry_get_entry_type($0)
            return type == GST_TOC_ENTRY_TYPE_CHAPTER || type == GST_TOC_ENTRY_TYPE_TRACK
        }
        if !sequence.isEmpty {
            return sequence.map(tocChapter)
        }
        guard depth < 8 else { return [] }  // real TOCs nest two or three levels
        for entry in entries {
            let inner = tocChapters(gst_toc_entry_get_sub_entries(entry), depth: depth + 1)
            if !inner.isEmpty { return inner }
        }
        return []
    }

    /// The entries of a GList owned by the TOC (not new references).
    private static func tocEntries(_ list: UnsafeMutablePointer<GList>?) -> [OpaquePointer] {
        var entries: [OpaquePointer] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data { entries.append(OpaquePointer(data)) }
            node = current.pointee.next
        }
        return entries
    }

    private static func tocChapter(_ entry: OpaquePointer) -> MediaInfo.Chapter {
        var start: gint64 = -1
        var stop: gint64 = -1
        let hasTimes = gst_toc_entry_get_start_stop_times(entry, &start, &stop) != 0
        var title = ""
        if let tags = gst_toc_entry_get_tags(entry) {  // borrowed
            var value: UnsafePointer<gchar>?
            if gst_tag_list_peek_string_index(tags, "title", 0, &value) != 0, let value {
                title = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        // Times are nanoseconds; -1 (GST_CLOCK_TIME_NONE as gint64) means unknown.
        let startTime: Duration = hasTimes && start >= 0 ? .nanoseconds(start) : .zero
        let stopTime: Duration? = hasTimes && stop >= 0 ? .nanoseconds(stop) : nil
        return MediaInfo.Chapter(title: title, start: startTime, end: stopTime.flatMap { $0 >= startTime ? $0 : nil })
    }
}

/// The tag lists of every stream the discoverer found, audio streams first, then the rest and the container.
/// A tag is read from the first list that has it (``TagReader``).
private struct TagLists {
    private let streams: [OpaquePointer]

    init(_ info: OpaquePointer) {
        var audio: [OpaquePointer] = []
        var others: [OpaquePointer] = []
        // gst_discoverer_info_get_stream_list gives every stream with a reference each; we keep them until release().
        if let list = gst_discoverer_info_get_stream_list(info) {
            var node: UnsafeMutablePointer<GList>? = list
            while let current = node {
                if let data = current.pointee.data {
                    // gst_discoverer_stream_info_ref and GST_IS_DISCOVERER_AUDIO_INFO are macros over these.
                    g_object_ref(data)
                    let stream = OpaquePointer(data)
                    let isAudio = g_type_check_instance_is_a(
                        data.assumingMemoryBound(to: GTypeInstance.self), gst_discoverer_audio_info_get_type()
                    ) != 0
                    if isAudio { audio.append(stream) } else { others.append(stream) }
                }
                node = current.pointee.next
            }
            gst_discoverer_stream_info_list_free(list)
        }
        // The top of the topology is the container (if any): container-level tags (MP4/M4B metadata) live there.
        if let top = gst_discoverer_info_get_stream_info(info) {  // +1 reference
            if (audio + others).contains(top) {
                g_object_unref(UnsafeMutableRawPointer(top))
            } else {
                others.append(top)
            }
        }
        streams = audio + others
    }

    func release() {
        streams.forEach { g_object_unref(UnsafeMutableRawPointer($0)) }
    }

    var lists: [UnsafePointer<GstTagList>] {
        streams.compactMap { stream in
            // A container's own tags (e.g. MP4 metadata) have their own getter since 1.20.
            let isContainer = g_type_check_instance_is_a(
                UnsafeMutableRawPointer(stream).assumingMemoryBound(to: GTypeInstance.self),
                gst_discoverer_container_info_get_type()
            ) != 0
            return isContainer
                ? gst_discoverer_container_info_get_tags(stream)
                : gst_discoverer_stream_info_get_tags(stream)
        }
    }
}

/// What MediaInfo holds of tag lists, each tag read from the first list that has it: the discoverer's streams, or
/// the tags libgsttag reads from an MP3 file's ID3 tags (``ID3Tags``).
struct TagReader {
    let lists: [UnsafePointer<GstTagList>]

    /// The tags, without a duration or chapters.
    var mediaInfo: MediaInfo {
        let (series, part) = series()
        return MediaInfo(title: string("title"), artists: strings("artist"), album: string("album"),
                         albumArtist: string("album-artist"), genre: string("genre"), trackNumber: number("track-number"),
                         discNumber: number("album-disc-number"), hasAudio: true,
                         cover: image("image") ?? image("preview-image"), lyrics: lyrics(), series: series, seriesPart: part)
    }

    func string(_ tag: String) -> String? {
        strings(tag).first
    }

    func strings(_ tag: String) -> [String] {
        for list in lists {
            let count = gst_tag_list_get_tag_size(list, tag)
            let values: [String] = (0..<count).compactMap { index in
                var value: UnsafePointer<gchar>?
                guard gst_tag_list_peek_string_index(list, tag, index, &value) != 0, let value else { return nil }
                let text = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines)
                return text.isEmpty ? nil : text
            }
            if !values.isEmpty { return values }
        }
        return []
    }

    func number(_ tag: String) -> Int? {
        for list in lists {
            var value: guint = 0
            if gst_tag_list_get_uint(list, tag, &value) != 0 { return Int(value) }
        }
        return nil
    }

    /// The words of the tags, synced ones first: an ID3 `SYLT` frame (GStreamer 1.22 maps neither it nor `USLT`:
    /// both come as "private-id3v2-frame"), the "lyrics" tag (MP4's `©lyr`), a `USLT` frame, a Vorbis comment
    /// `LYRICS` or `UNSYNCEDLYRICS` (left as an "extended-comment"). The first that can be read; else why not.
    func lyrics() -> TagLyrics? {
        let frames = id3Frames(["USLT", "SYLT"])
        let synced = frames.filter { $0.id == "SYLT" }.compactMap { TagLyrics.id3Frame($0) }
        let unsynced = frames.filter { $0.id == "USLT" }.compactMap { TagLyrics.id3Frame($0) }
        let tagged = string("lyrics").map { TagLyrics.text($0) }
        let comments = vorbisComments().filter { $0.key == "LYRICS" || $0.key == "UNSYNCEDLYRICS" }
            .map { TagLyrics.text($0.value) }
        return TagLyrics.first(synced + [tagged].compactMap { $0 } + unsynced + comments)
    }

    /// The series and the book's place in it, which GStreamer 1.22 does not map: ID3 `TXXX` frames `SERIES` and
    /// `SERIES-PART` (or `SERIESPART`), else the movement frames `MVNM` and `MVIN` (all "private-id3v2-frame"); Vorbis
    /// comments `SERIES` and `SERIES-PART` (or `SERIESPART`), else `MOVEMENTNAME` and `MOVEMENT` (all
    /// "extended-comment"). See ``MediaInfo/series(from:)``.
    func series() -> (series: String?, part: String?) {
        let frames = id3Frames(["TXXX", "MVNM", "MVIN"])
        let userTexts = frames.compactMap(\.userText).map { (key: $0.description.uppercased(), value: $0.value) }
        let comments = vorbisComments()
        func first(_ pairs: [(key: String, value: String)], _ keys: Set<String>) -> String? {
            pairs.first { keys.contains($0.key) }?.value
        }
        return MediaInfo.series(from: [
            (first(userTexts, ["SERIES"]), first(userTexts, ["SERIES-PART", "SERIESPART"])),
            (frames.first { $0.id == "MVNM" }?.text, frames.first { $0.id == "MVIN" }?.text.map(movementNumber)),
            (first(comments, ["SERIES"]), first(comments, ["SERIES-PART", "SERIESPART"])),
            (first(comments, ["MOVEMENTNAME"]), first(comments, ["MOVEMENT"]).map(movementNumber)),
        ])
    }

    /// A movement's number as ID3 writes it, "2" or "2/5": the part before the slash.
    private func movementNumber(_ text: String) -> String {
        String(text.prefix { $0 != "/" })
    }

    /// The Vorbis comments GStreamer does not map ("extended-comment": "KEY=value"), keys in upper case (Vorbis
    /// comment keys ignore case), values trimmed; those with an empty value left out.
    private func vorbisComments() -> [(key: String, value: String)] {
        strings("extended-comment").compactMap { comment in
            guard let equals = comment.firstIndex(of: "=") else { return nil }
            let value = comment[comment.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines)
            return value.isEmpty ? nil : (comment[..<equals].uppercased(), value)
        }
    }

    /// The ID3v2 frames GStreamer does not map ("private-id3v2-frame": each frame with its header) named by `ids`,
    /// from the first tag list that has any.
    private func id3Frames(_ ids: Set<String>) -> [ID3Frame] {
        for list in lists {
            var frames: [ID3Frame] = []
            let count = gst_tag_list_get_tag_size(list, "private-id3v2-frame")
            for index in 0..<count {
                var sample: OpaquePointer?
                guard gst_tag_list_get_sample_index(list, "private-id3v2-frame", index, &sample) != 0, let sample else { continue }
                defer { gst_sample_unref(sample) }
                guard let buffer = gst_sample_get_buffer(sample) else { continue }
                let size = gst_buffer_get_size(buffer)
                guard size >= 10 else { continue }
                var bytes = [UInt8](repeating: 0, count: Int(size))
                guard gst_buffer_extract(buffer, 0, &bytes, size) == size, let frame = ID3Frame(bytes),
                      ids.contains(frame.id) else { continue }
                frames.append(frame)
            }
            if !frames.isEmpty { return frames }
        }
        return []
    }

    func image(_ tag: String) -> MediaInfo.CoverImage? {
        for list in lists {
            var sample: OpaquePointer?
            guard gst_tag_list_get_sample_index(list, tag, 0, &sample) != 0, let sample else { continue }
            defer { gst_sample_unref(sample) }
            guard let caps = gst_sample_get_caps(sample), let structure = gst_caps_get_structure(caps, 0),
                  let name = gst_structure_get_name(structure) else { continue }
            let mimeType = String(cString: name)
            guard mimeType.hasPrefix("image/"), let buffer = gst_sample_get_buffer(sample) else { continue }
            let size = gst_buffer_get_size(buffer)
            guard size > 0 else { continue }
            var data = Data(count: Int(size))
            let copied = data.withUnsafeMutableBytes { bytes in
                gst_buffer_extract(buffer, 0, bytes.baseAddress, size)
            }
            guard copied == size else { continue }
            return MediaInfo.CoverImage(data: data, mimeType: mimeType)
        }
        return nil
    }
}
