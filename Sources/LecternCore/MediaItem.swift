import Foundation

/// One playable file in the queue, with what its tags say.
public struct MediaItem: Sendable, Equatable, Identifiable {
    /// Unique for the daemon's lifetime: a new queue gets new ids, so clients never confuse tracks.
    public var id: Int
    public var url: URL
    public var title: String?
    public var artists: [String]
    public var album: String?
    public var albumArtists: [String]
    public var trackNumber: Int?
    public var discNumber: Int?
    public var genre: String?
    public var duration: Duration?
    /// A file:// URL of the cover image, when one is known.
    public var artURL: URL?
    /// The chapters inside the file, by start; empty when the file is one chapter.
    public var chapters: [ChapterMark]
    /// The library's id of this file, when it is a file of a book of the library.
    public var libraryFileID: Int64?
    /// Its words (lyrics, a transcript), from an LRC file beside it or its tags; nil when it has none.
    public var lyrics: Lyrics?
    /// The series its book is in, and the book's part in it; nil when none.
    public var series: String?
    public var seriesPart: String?

    public init(id: Int, url: URL, title: String? = nil, artists: [String] = [], album: String? = nil,
                albumArtists: [String] = [], trackNumber: Int? = nil, discNumber: Int? = nil, genre: String? = nil,
                duration: Duration? = nil, artURL: URL? = nil, chapters: [ChapterMark] = [], libraryFileID: Int64? = nil,
                lyrics: Lyrics? = nil, series: String? = nil, seriesPart: String? = nil) {
        self.libraryFileID = libraryFileID
        self.series = series
        self.seriesPart = seriesPart
        self.lyrics = lyrics
        self.id = id
        self.url = url
        self.title = title
        self.artists = artists
        self.album = album
        self.albumArtists = albumArtists
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.genre = genre
        self.duration = duration
        self.artURL = artURL
        self.chapters = chapters
    }

    /// The title to show: the tag, else the file name without its extension.
    public var displayTitle: String { title ?? url.deletingPathExtension().lastPathComponent }

    /// A stream (http, https), not a file: the engine tells whether it can be moved in, and its tags as it plays.
    public var isStream: Bool { !url.isFileURL }
}

/// A chapter's title and where it starts in its file.
public struct ChapterMark: Sendable, Equatable {
    public var title: String
    public var start: Duration
    public init(title: String, start: Duration) {
        self.title = title
        self.start = start
    }
}
