import DBus

/// A bookmark, as ListBookmarks gives it.
public struct Bookmark: ReplyDecodable {
    public var id: Int64
    public var book: Int64?
    /// The id of its file.
    public var file: Int64?
    /// µs into the file.
    public var offset: Int64
    public var title: String
    public var note: String
    /// µs since the epoch.
    public var created: Int64?
    /// "user", "sleepTimer", "unplug" or "stop".
    public var kind: String?
    /// The bookmark as lecternd gave it, every key: what `--json` prints.
    public var reply: DBusValue

    public init(_ reader: inout ReplyReader) throws {
        id = try reader.read("id") ?? 0
        book = try reader.read("book")
        file = try reader.read("file")
        offset = try reader.read("offset") ?? 0
        title = try reader.read("title") ?? ""
        note = try reader.read("note") ?? ""
        created = try reader.read("created")
        kind = try reader.read("kind")
        reply = reader.reply
    }
}

/// ImportBookmarks' reply: how many bookmarks were added, and how many were there already.
public struct ImportedBookmarks: Sendable {
    public var added: UInt32
    public var skipped: UInt32
}

/// What the client reads of org.lectern.Bookmarks1.
public struct Bookmarks1: Sendable {
    public let bookmarks = Decoding<[Bookmark]>(.reply(.bookmarks, method: "ListBookmarks")) { try $0.dictionaries("bookmarks") ?? [] }
    public let added = Decoding<Int64>.reply(.bookmarks, "AddBookmark", "id")
    public let imported = Decoding<ImportedBookmarks>(.reply(.bookmarks, method: "ImportBookmarks")) {
        ImportedBookmarks(added: try $0.value("added"), skipped: try $0.value("skipped"))
    }
}
