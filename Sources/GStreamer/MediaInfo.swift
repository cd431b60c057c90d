import Foundation

/// What a media file says about itself: duration, tags, embedded cover art and chapters.
///
/// ```swift
/// let info = try Discoverer.discover(URL(fileURLWithPath: "/books/dune/01.mka"))
/// print(info.title ?? "untitled", info.duration ?? .zero, info.chapters.map(\.title))
/// ```
public struct MediaInfo: Sendable, Equatable {
    /// Embedded picture bytes (e.g. a PNG or JPEG) and their MIME type ("image/jpeg").
    public struct CoverImage: Sendable, Equatable {
        public var data: Data
        public var mimeType: String

        public init(data: Data, mimeType: String) {
            self.data = data
            self.mimeType = mimeType
        }
    }

    /// One entry of the file's table of contents (a Matroska chapter, a FLAC cue sheet track).
    ///
    /// ```swift
    /// let chapter = MediaInfo.Chapter(title: "Prologue", start: .zero, end: .seconds(312))
    /// ```
    public struct Chapter: Sendable, Equatable {
        /// The chapter's "title" tag; empty when the file gives none.
        public var title: String
        public var start: Duration
        /// As the file says, else the next chapter's start, else (the last one) the file's duration; nil if none
        /// of these is known.
        public var end: Duration?

        public init(title: String, start: Duration, end: Duration? = nil) {
            self.title = title
            self.start = start
            self.end = end
        }
    }

    /// Nil when the container does not tell it.
    public var duration: Duration?
    public var title: String?
    /// Every value of the "artist" tag, in order.
    public var artists: [String]
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    /// Whether the file has an audio stream (always true for a value from ``Discoverer/discover(_:timeout:)``,
    /// which throws ``MediaError/notAudio(_:)`` otherwise).
    public var hasAudio: Bool
    /// The "image" tag (else "preview-image"), when the file embeds one.
    public var cover: CoverImage?
    /// The chapters of the file's table of contents, in time order; empty when it has none. GStreamer 1.22
    /// gives Matroska (MKA/MKV) chapters and FLAC cue sheets this way, but not MP4/M4B chapters (qtdemux does not
    /// read them): the MP4 module reads those.
    public var chapters: [Chapter]
    /// The words in the tags (lyrics, a transcript), or why they cannot be used; nil when the tags have none.
    public var lyrics: TagLyrics?
    /// The series the file's book belongs to, as its tags name it (ID3 `TXXX:SERIES` or the movement name `MVNM`, MP4
    /// `©mvn` or a freeform `SERIES`, Vorbis comment `SERIES` or `MOVEMENTNAME`); nil when they don't. The discoverer
    /// reads ID3 frames and Vorbis comments; of MP4 items GStreamer 1.22 drops the freeform ones and leaves the others
    /// unread: the media reader reads those with the MP4 module.
    public var series: String?
    /// The book's place in its series as the tags write it, trimmed ("2", "2.5", "0", "1-3"; ID3 `TXXX:SERIES-PART`
    /// or `MVIN`, "2/5" giving "2"; MP4 `©mvi` or a freeform `SERIES-PART`; Vorbis `SERIES-PART`, `SERIESPART` or
    /// `MOVEMENT`); nil when they don't say. It comes with the series: see ``series(from:)``.
    public var seriesPart: String?

    public init(
        duration: Duration? = nil, title: String? = nil, artists: [String] = [], album: String? = nil,
        albumArtist: String? = nil, genre: String? = nil, trackNumber: Int? = nil, discNumber: Int? = nil,
        hasAudio: Bool = true, cover: CoverImage? = nil, chapters: [Chapter] = [],
        lyrics: TagLyrics? = nil, series: String? = nil, seriesPart: String? = nil
    ) {
        self.duration = duration
        self.title = title
        self.artists = artists
        self.album = album
        self.albumArtist = albumArtist
        self.genre = genre
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.hasAudio = hasAudio
        self.cover = cover
        self.chapters = chapters
        self.lyrics = lyrics
        self.series = series
        self.seriesPart = seriesPart
    }
}

extension MediaInfo {
    /// The series and part of the first of `sources` (in order of precedence: a file's `SERIES` tags, then its
    /// movement's) that names a series; without a series, the first part any gives. Values trimmed, empty ones nil.
    ///
    /// ```swift
    /// MediaInfo.series(from: [(nil, nil), ("Mistborn", "2")])   // ("Mistborn", "2")
    /// ```
    public static func series(from sources: [(series: String?, part: String?)]) -> (series: String?, part: String?) {
        func trimmed(_ text: String?) -> String? {
            text.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let found = sources.map { (series: trimmed($0.series), part: trimmed($0.part)) }
        return found.first { $0.series != nil } ?? (nil, found.lazy.compactMap(\.part).first)
    }
}

/// Why a file could not be used as audio. Each case carries a message a user can read.
public enum MediaError: Error, Equatable, Sendable {
    /// No file at that path.
    case notFound(String)
    /// The file exists but cannot be read (permissions, I/O error).
    case unreadable(String)
    /// Readable, but not audio: unknown format, a picture, a text file, a directory, no audio stream.
    case notAudio(String)
    /// Anything else: missing plugin, timeout, internal GStreamer error.
    case failed(String)
}

extension MediaError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notFound(let message), .unreadable(let message), .notAudio(let message), .failed(let message):
            message
        }
    }
}
