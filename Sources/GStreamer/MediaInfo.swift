import Foundation

/// What a media file says about itself: duration, tags and embedded cover art.
///
/// ```swift
/// let info = try Discoverer.discover(URL(fileURLWithPath: "/books/dune/01.m4b"))
/// print(info.title ?? "untitled", info.duration ?? .zero)
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

    public init(
        duration: Duration? = nil, title: String? = nil, artists: [String] = [], album: String? = nil,
        albumArtist: String? = nil, genre: String? = nil, trackNumber: Int? = nil, discNumber: Int? = nil,
        hasAudio: Bool = true, cover: CoverImage? = nil
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
