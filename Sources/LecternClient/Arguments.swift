import DBus

/// What books must match (Find, Search, Group, Random, ListBooksMatching, MoveBooks): parts of their title, author,
/// album, composer or genre, and how far through them the listener is.
public struct BookQuery: Sendable {
    public var title, author, album, composer, genre: String?
    public var progress: BookProgress?
    /// The book's series, whole.
    public var series: String?

    public init(title: String? = nil, author: String? = nil, album: String? = nil, composer: String? = nil, genre: String? = nil,
                progress: BookProgress? = nil, series: String? = nil) {
        (self.title, self.author, self.album, self.composer, self.genre) = (title, author, album, composer, genre)
        (self.progress, self.series) = (progress, series)
    }

    /// Nothing to match: every book.
    public var isEmpty: Bool { value.stringKeyedDictionary?.isEmpty ?? true }

    var value: DBusValue {
        var query: [String: DBusValue] = [:]
        for (key, value) in [("title", title), ("author", author), ("album", album), ("composer", composer), ("genre", genre),
                             ("progress", progress?.rawValue), ("series", series)] {
            if let value { query[key] = .string(value) }
        }
        return .vardict(query)
    }
}

/// How far through a book the listener is, as a query's `progress` spells it.
public enum BookProgress: String, Sendable, CaseIterable {
    /// Its place at the very start.
    case notStarted = "not-started"
    /// Not finished, its place past the start.
    case inProgress = "in-progress"
    /// Marked finished: played to the end, or by hand.
    case finished
    /// Not marked finished: not started or in progress.
    case unfinished
}

/// Some of a book's settings, changed (SetBookSettings); nil: left as it is.
public struct BookSettingsChange: Sendable {
    public var normalise: Bool?
    public var compress: Bool?
    public var skipIntro: Double?
    public var skipOutro: Double?
    public var skipSilence: Bool?
    public var silenceThreshold: Double?
    public var silenceAmount: Double?

    public init() {}

    public var isEmpty: Bool { value.stringKeyedDictionary?.isEmpty ?? true }

    var value: DBusValue {
        var changes: [String: DBusValue] = [:]
        for (key, value) in [("normalise", normalise), ("compress", compress), ("skip_silence", skipSilence)] {
            if let value { changes[key] = .boolean(value) }
        }
        for (key, value) in [("skip_intro", skipIntro), ("skip_outro", skipOutro), ("silence_threshold", silenceThreshold),
                             ("silence_amount", silenceAmount)] {
            if let value { changes[key] = .double(value) }
        }
        return .vardict(changes)
    }
}

/// A bookmark made elsewhere, to add to a book (ImportBookmarks).
public struct NewBookmark: Sendable {
    /// The file's place in the book, from 0.
    public var file: Int32
    /// µs into the file.
    public var offset: Int64
    public var title: String
    public var note: String
    /// "user", "sleepTimer", "unplug" or "stop"; nil: "user".
    public var kind: String?
    /// µs since the epoch; nil: now.
    public var created: Int64?

    public init(file: Int32, offset: Int64, title: String, note: String, kind: String?, created: Int64?) {
        (self.file, self.offset, self.title, self.note, self.kind, self.created) = (file, offset, title, note, kind, created)
    }

    var value: DBusValue {
        var map: [String: DBusValue] = ["file": .int32(file), "offset": .int64(offset), "title": .string(title), "note": .string(note)]
        if let kind { map["kind"] = .string(kind) }
        if let created { map["created"] = .int64(created) }
        return .vardict(map)
    }
}
