import Foundation

/// Reads the chapter list of an MP4/M4B/M4A (or QuickTime .mov) file from its atoms, without GStreamer.
///
/// ```swift
/// let chapters = try MP4ChapterReader.chapters(of: URL(fileURLWithPath: "/books/dune.m4b"))
/// // [MP4Chapter(title: "Prologue", start: 0 s, end: 312.5 s), ...]
/// ```
/// Two places can hold chapters, and files made by ffmpeg carry both:
/// - a QuickTime chapter track: the audio track's `tref/chap` names a text track whose samples (each a 16-bit
///   length and UTF-8 or UTF-16 text) are the titles, timed by that track's sample table;
/// - a Nero `chpl` atom in `moov/udta`: start times in 100 ns units and length-prefixed UTF-8 titles.
///
/// Only atom headers and the few small atoms that matter are read (seek + read): the audio data and the audio
/// track's sample tables are never loaded, whatever the file's size. Damaged chapter data is skipped, never
/// trusted: counts are capped at ``maximumChapters``, every read is bounded by its atom and by the file.
/// Each call opens and closes its own file handle: calls may run concurrently. A call blocks on file I/O
/// (typically a few milliseconds).
public enum MP4ChapterReader {
    /// No list is longer than this; extra entries are ignored.
    public static let maximumChapters = 10_000

    /// The chapters of the file at `url`, in time order (see ``MP4ChapterSources/preferred``); empty when the
    /// movie has no chapters or its chapter data is unusable.
    /// - Throws: ``MP4Error``: `.notFound`, `.unreadable` (I/O, permissions, a directory), `.notMP4` (the file
    ///   does not begin with an MP4 atom: empty, text, another format), `.malformed` (an MP4 whose `moov` atom is
    ///   missing or cut off, as in a file truncated before it).
    public static func chapters(of url: URL) throws(MP4Error) -> [MP4Chapter] {
        try sources(of: url).preferred
    }

    /// ``chapters(of:)`` for a file already in memory.
    public static func chapters(in data: Data) throws(MP4Error) -> [MP4Chapter] {
        try sources(in: data).preferred
    }

    /// Both chapter lists of the file at `url` and its duration, before one list is chosen.
    /// - Throws: as ``chapters(of:)``.
    public static func sources(of url: URL) throws(MP4Error) -> MP4ChapterSources {
        let source = try FileSource(url)
        return try read(source, name: url.path(percentEncoded: false))
    }

    /// ``sources(of:)`` for a file already in memory.
    public static func sources(in data: Data) throws(MP4Error) -> MP4ChapterSources {
        try read(DataSource(data: data), name: "data")
    }

    // MARK: - The movie

    static func read(_ source: some ByteSource, name: String) throws(MP4Error) -> MP4ChapterSources {
        let movie = try AtomWalker.movie(source, name: name)
        var header: MediaHeader?
        var tracks: [Track] = []
        var userData: Atom?
        try AtomWalker.walk(source, from: movie.payloadOffset, to: movie.end) { atom throws(MP4Error) in
            switch atom.type {
            case .mvhd: header = header ?? (try? MediaHeader(atom, source))
            case .trak:
                // A damaged track is skipped, not fatal: the others may still name the chapters.
                if let track = try ignoringDamage({ () throws(MP4Error) in try Track(atom, source) }) {
                    tracks.append(track)
                }
            case .udta: userData = userData ?? atom
            default: break
            }
            return true
        }
        let duration = header?.duration

        var nero: [MP4Chapter]?
        if let userData, let chpl = try AtomWalker.child(source, of: userData, type: .chpl) {
            nero = try ignoringDamage { () throws(MP4Error) in try NeroChapters.read(chpl, source) }
                .flatMap { $0.isEmpty ? nil : withEnds($0, last: duration) }
        }
        let quickTime = try ChapterTrack.read(tracks, source)
            .flatMap { $0.chapters.isEmpty ? nil : withEnds($0.chapters, last: duration ?? $0.end) }
        return MP4ChapterSources(quickTimeTrack: quickTime, nero: nero, duration: duration)
    }

    /// Sorted by start (stable), each ending where the next starts and the last at `last` (nil if unknown or
    /// before its start).
    static func withEnds(_ chapters: [MP4Chapter], last: Duration?) -> [MP4Chapter] {
        var sorted = chapters.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }
            .map(\.element)
        for index in sorted.indices {
            let end = index + 1 < sorted.count ? sorted[index + 1].start : last
            sorted[index].end = end.flatMap { $0 >= sorted[index].start ? $0 : nil }
        }
        return sorted
    }

    /// Runs `body`; a `.malformed` error (damaged chapter data) becomes nil, other errors (I/O) propagate.
    static func ignoringDamage<T>(_ body: () throws(MP4Error) -> T?) throws(MP4Error) -> T? {
        do {
            return try body()
        } catch .malformed {
            return nil
        } catch {
            throw error
        }
    }
}

// MARK: - Atoms the reader needs

/// `mvhd` or `mdhd`: a timescale and a duration in its units.
struct MediaHeader {
    let timescale: UInt32
    /// Nil when unknown (0 or all ones).
    let ticks: UInt64?

    init(_ atom: Atom, _ source: some ByteSource) throws(MP4Error) {
        var reader = ByteReader(try atom.payload(source, limit: 32), what: "\(atom.type)")
        let version = try reader.u8()
        try reader.skip(3)  // flags
        let unknown: UInt64
        let value: UInt64
        if version == 1 {
            try reader.skip(16)  // creation and modification times
            timescale = try reader.u32()
            value = try reader.u64()
            unknown = .max
        } else {
            try reader.skip(8)
            timescale = try reader.u32()
            value = UInt64(try reader.u32())
            unknown = UInt64(UInt32.max)
        }
        ticks = value == 0 || value == unknown ? nil : value
        guard timescale > 0 else { throw .malformed("\(atom.type): timescale 0") }
    }

    var duration: Duration? {
        ticks.map { Time.duration($0, timescale: timescale) }
    }
}

/// A `trak`, as far as chapters need it: its id, the chapter tracks it names, and its `mdia` for later.
struct Track {
    let id: UInt32?
    let chapterTrackIDs: [UInt32]
    let media: Atom?

    init(_ atom: Atom, _ source: some ByteSource) throws(MP4Error) {
        var id: UInt32?
        var references: [UInt32] = []
        var media: Atom?
        try AtomWalker.walk(source, from: atom.payloadOffset, to: atom.end) { child throws(MP4Error) in
            switch child.type {
            case .tkhd:
                id = try MP4ChapterReader.ignoringDamage { () throws(MP4Error) in
                    var reader = ByteReader(try child.payload(source, limit: 24), what: "tkhd")
                    let version = try reader.u8()
                    try reader.skip(3 + (version == 1 ? 16 : 8))
                    return try reader.u32()
                }
            case .tref:
                if let chap = try AtomWalker.child(source, of: child, type: .chap) {
                    // A handful of ids at most; more than 64 is garbage.
                    let bytes = try chap.payload(source, limit: 64 * 4)
                    var reader = ByteReader(bytes, what: "chap")
                    while reader.remaining >= 4 {
                        references.append(try reader.u32())
                    }
                }
            case .mdia:
                media = media ?? child
            default:
                break
            }
            return true
        }
        self.id = id
        chapterTrackIDs = references
        self.media = media
    }
}

/// Conversions of file time to `Duration`.
enum Time {
    /// `ticks / timescale` seconds, to the nanosecond, without overflow.
    static func duration(_ ticks: UInt64, timescale: UInt32) -> Duration {
        let scale = UInt64(max(timescale, 1))
        let seconds = ticks / scale
        let nanoseconds = (ticks % scale) * 1_000_000_000 / scale  // < 2^32 * 10^9 < 2^64
        return .seconds(Int64(clamping: seconds)) + .nanoseconds(Int64(nanoseconds))
    }
}
