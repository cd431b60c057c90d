/// One chapter of an MP4/M4B/M4A file.
///
/// ```swift
/// let chapters = try MP4ChapterReader.chapters(of: URL(fileURLWithPath: "/books/dune.m4b"))
/// for chapter in chapters { print(chapter.title, chapter.start, chapter.end ?? .zero) }
/// ```
public struct MP4Chapter: Sendable, Equatable {
    /// The chapter's name as the file spells it; empty when the file gives none.
    public var title: String
    /// Where the chapter starts, from the beginning of the file's timeline.
    public var start: Duration
    /// Where it ends: the next chapter's start, or for the last one the movie's duration. Nil when unknown.
    public var end: Duration?

    public init(title: String, start: Duration, end: Duration? = nil) {
        self.title = title
        self.start = start
        self.end = end
    }
}

/// Both chapter lists an MP4 file can carry, as read, before one is chosen.
///
/// ```swift
/// let sources = try MP4ChapterReader.sources(of: url)
/// print(sources.quickTimeTrack?.count ?? 0, sources.nero?.count ?? 0, sources.preferred.count)
/// ```
public struct MP4ChapterSources: Sendable, Equatable {
    /// From the QuickTime chapter text track (`tref`/`chap`); nil when the file has none or it is unusable.
    public var quickTimeTrack: [MP4Chapter]?
    /// From the Nero `chpl` atom in `moov/udta`; nil when the file has none or it is unusable.
    public var nero: [MP4Chapter]?
    /// The movie's duration (`mvhd`), when it is known.
    public var duration: Duration?

    public init(quickTimeTrack: [MP4Chapter]? = nil, nero: [MP4Chapter]? = nil, duration: Duration? = nil) {
        self.quickTimeTrack = quickTimeTrack
        self.nero = nero
        self.duration = duration
    }

    /// The list to use: the QuickTime track when both exist with as many chapters (its titles are not cut at
    /// 255 bytes and its times have the track's precision); when their counts differ, the longer one (ffmpeg
    /// writes at most 255 entries into `chpl`; a damaged track yields fewer); otherwise whichever exists.
    public var preferred: [MP4Chapter] {
        switch (quickTimeTrack, nero) {
        case let (track?, nero?):
            track.count >= nero.count ? track : nero
        case let (track?, nil):
            track
        case let (nil, nero?):
            nero
        case (nil, nil):
            []
        }
    }
}

/// Why ``MP4ChapterReader`` could not read a file. Each case carries a message a user can read.
public enum MP4Error: Error, Equatable, Sendable {
    /// No file at that path.
    case notFound(String)
    /// The file exists but cannot be opened or read (permissions, I/O error).
    case unreadable(String)
    /// The file does not begin with an MP4/QuickTime atom: empty, text, another format.
    case notMP4(String)
    /// It begins like an MP4, but its movie atom (`moov`) is missing or cannot be reached: usually a truncated
    /// file whose `moov` was at the end.
    case malformed(String)
}

extension MP4Error: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notFound(let message), .unreadable(let message), .notMP4(let message), .malformed(let message):
            message
        }
    }
}
