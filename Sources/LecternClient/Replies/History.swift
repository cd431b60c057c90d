import DBus

/// A place undo goes back to (Undo, ListUndo).
public struct UndoPlace: ReplyDecodable {
    public var book: Int64
    /// The id of its file.
    public var file: Int64?
    /// µs into the file.
    public var offset: Int64
    /// The move it undoes: "seek", "chapter", "jump", "bookmark" or "book".
    public var kind: String

    public init(_ reader: inout ReplyReader) throws {
        book = try reader.read("book") ?? 0
        file = try reader.read("file")
        offset = try reader.read("offset") ?? 0
        kind = try reader.read("kind") ?? ""
    }
}

/// A listening session (ListSessions): times in µs since the epoch, positions and durations in µs.
public struct Session: ReplyDecodable {
    /// 0 once the book is deleted.
    public var book: Int64
    public var title: String
    public var started: Int64
    public var ended: Int64
    /// The part of the book heard, from its start in book order.
    public var from: Int64
    public var to: Int64
    /// Time spent listening.
    public var listened: Int64
    /// Time of the book heard.
    public var content: Int64
    public var speed: Double
    /// Listening time skip silence saved.
    public var silence: Int64

    public init(_ reader: inout ReplyReader) throws {
        book = try reader.read("book") ?? 0
        title = try reader.read("title") ?? ""
        started = try reader.read("started") ?? 0
        ended = try reader.read("ended") ?? 0
        from = try reader.read("from") ?? 0
        to = try reader.read("to") ?? 0
        listened = try reader.read("listened") ?? 0
        content = try reader.read("content") ?? 0
        speed = try reader.read("speed") ?? 1
        silence = try reader.read("silence") ?? 0
    }
}

/// GetStats' figures for a span (µs).
public struct ListeningStats: ReplyDecodable {
    public var listened: Int64
    public var content: Int64
    public var savedBySpeed: Int64
    public var savedBySilence: Int64
    /// Oldest first, labelled by day ("yyyy-MM-dd").
    public var days: [ListeningTotal]
    /// Most listened first, labelled by name.
    public var books: [ListeningTotal]
    /// Labelled by name ("" for books on no shelf).
    public var shelves: [ListeningTotal]
    public var finished: [FinishedBook]
    /// The figures as lecternd gave them, every key: what `--json` prints.
    public var reply: DBusValue

    public init(_ reader: inout ReplyReader) throws {
        listened = try reader.read("listened") ?? 0
        content = try reader.read("content") ?? 0
        savedBySpeed = try reader.read("savedBySpeed") ?? 0
        savedBySilence = try reader.read("savedBySilence") ?? 0
        days = try reader.dictionaries("days") { try ListeningTotal(&$0, label: "day") } ?? []
        books = try reader.dictionaries("books") { try ListeningTotal(&$0, label: "name") } ?? []
        shelves = try reader.dictionaries("shelves") { try ListeningTotal(&$0, label: "name") } ?? []
        finished = try reader.dictionaries("finished") ?? []
        reply = reader.reply
    }
}

/// Time listened on a day, to a book or to a shelf's books.
public struct ListeningTotal: Sendable {
    /// The day, or the book's or shelf's name.
    public var label: String?
    public var listened: Int64
    /// Listening time skip silence saved.
    public var silence: Int64

    init(_ reader: inout ReplyReader, label key: String) throws {
        label = try reader.read(key)
        listened = try reader.read("listened") ?? 0
        silence = try reader.read("silence") ?? 0
    }
}

/// A book marked finished in the span.
public struct FinishedBook: ReplyDecodable {
    public var title: String
    /// µs since the epoch.
    public var finished: Int64

    public init(_ reader: inout ReplyReader) throws {
        title = try reader.read("title") ?? ""
        finished = try reader.read("finished") ?? 0
    }
}

/// What the client reads of org.lectern.History1.
public struct History1: Sendable {
    public let undo = Decoding<UndoPlace>(.reply(.history, method: "Undo")) { try $0.value("place", of: UndoPlace.self) }
    public let undoList = Decoding<[UndoPlace]>(.reply(.history, method: "ListUndo")) { try $0.dictionaries("places") ?? [] }
    public let sessions = Decoding<[Session]>(.reply(.history, method: "ListSessions")) { try $0.dictionaries("sessions") ?? [] }
    public let stats = Decoding<ListeningStats>(.reply(.history, method: "GetStats")) { try $0.value("stats", of: ListeningStats.self) }
}
