import DBus

/// org.lectern.Player1's GetStatus: the book, file and chapter figures; nil where lecternd leaves a key out (no
/// book, nothing loaded, no sleep timer). Files and chapters count from 0; times are µs.
public struct ListeningStatus: ReplyDecodable {
    public var status: String?
    public var speed: Double?
    /// The library book's id.
    public var book: Int64?
    public var title: String?
    public var author: String?
    public var file: Int32?
    public var files: Int32?
    public var filePosition: Int64?
    public var fileLength: Int64?
    public var chapter: Int32?
    public var chapters: Int32?
    public var chapterTitle: String?
    public var chapterPosition: Int64?
    public var chapterLength: Int64?
    /// Listening time left in the chapter at the current speed.
    public var chapterRemaining: Int64?
    public var bookPosition: Int64?
    public var bookLength: Int64?
    /// Listening time left in the book at the current speed.
    public var remaining: Int64?
    /// "off", "time" or "chapter".
    public var sleep: String?
    public var sleepTimeLeft: Int64?

    public init(_ reader: inout ReplyReader) throws {
        status = try reader.read("status")
        speed = try reader.read("speed")
        book = try reader.read("book")
        title = try reader.read("title")
        author = try reader.read("author")
        file = try reader.read("file")
        files = try reader.read("files")
        filePosition = try reader.read("filePosition")
        fileLength = try reader.read("fileLength")
        chapter = try reader.read("chapter")
        chapters = try reader.read("chapters")
        chapterTitle = try reader.read("chapterTitle")
        chapterPosition = try reader.read("chapterPosition")
        chapterLength = try reader.read("chapterLength")
        chapterRemaining = try reader.read("chapterRemaining")
        bookPosition = try reader.read("bookPosition")
        bookLength = try reader.read("bookLength")
        remaining = try reader.read("remaining")
        sleep = try reader.read("sleep")
        sleepTimeLeft = try reader.read("sleepTimeLeft")
    }
}

/// org.lectern.Player1's LyricsLineChanged: the line of synced lyrics playback reached.
public struct LyricsLine: Sendable {
    /// -1 before the first line, and without synced lyrics.
    public var index: Int32
    /// µs into the file.
    public var start: Int64
    /// µs into the file; -1 after the last line.
    public var next: Int64
    public var text: String
}

/// What the client reads of org.lectern.Player1.
public struct Player1: Sendable {
    public let status = Decoding<ListeningStatus>(.reply(.player, method: "GetStatus")) { try $0.value("status", of: ListeningStatus.self) }
    public let lyricsLineChanged = Decoding<LyricsLine>(.signal(.player, name: "LyricsLineChanged")) {
        LyricsLine(index: try $0.value("index"), start: try $0.value("start"), next: try $0.value("next"), text: try $0.value("text"))
    }
    public let speed = Decoding<Double>.property(.player, "Speed")
    public let lyricsLine = Decoding<String>.property(.player, "LyricsLine")
}
