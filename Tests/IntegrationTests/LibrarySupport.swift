import DBus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// Helpers for the library API tests (org.lectern.Library1, org.lectern.Bookmarks1, MPRIS Playlists):
// names, a generated media tree shared by the whole run, calls, imports, snapshots and daemon restarts.

enum Lib {
    static let busName = "org.lectern.Lectern1"
    static let path = "/org/lectern/Lectern1"
    static let library = "org.lectern.Library1"
    static let bookmarks = "org.lectern.Bookmarks1"
    static let playlists = "org.mpris.MediaPlayer2.Playlists"
    static let playlistPrefix = "/org/lectern/Lectern1/playlist/"

    static let notFound = "org.lectern.Error.NotFound"
    static let invalidArgument = "org.lectern.Error.InvalidArgument"
}

// MARK: - Media

/// Audio trees for imports, generated once per test process (a few seconds) and only read after; tests that
/// change files copy a folder into their own temporary directory first.
final class LibraryMedia: Sendable {
    let root: URL

    /// Everything below is imported in one go by several tests:
    ///
    ///     tree/Untagged Tales/1.ogg 2.ogg 10.ogg            untagged → "Untagged Tales", natural order
    ///     tree/Flac Book/1.flac 2.flac                       untagged → "Flac Book"
    ///     tree/Saga/b.mp3 a.mp3 c.mp3                        album "Mp3 Saga", tracks 1, 2, 3 (b, a, c)
    ///     tree/Chaptered/book.m4b                            album "Chaptered Book", 3 chapters
    ///     tree/Mixed/m1.mp3 m2.mp3 m3.mp3                    albums "Alpha Mix" (m1, m3) and "Beta Mix" (m2)
    ///     tree/Author/Book/CD1/01.mp3 02.mp3, CD2/01.mp3     album "Disc Set", disc 1 tracks 1, 2; disc 2 track 1
    ///     tree/Notes/readme.txt                              no audio
    var tree: URL { root.appendingPathComponent("tree") }
    static let treeTitles = ["Alpha Mix", "Beta Mix", "Chaptered Book", "Disc Set", "Flac Book", "Mp3 Saga", "Untagged Tales"]
    static let treeFileCount = 15
    static let sagaTitles = ["Part One", "Part Two", "Part Three"]
    /// The m4b's chapters: title, start ms, end ms.
    static let chapters: [(title: String, start: Int, end: Int)] = [("Opening", 0, 2000), ("Middle", 2000, 4000), ("Ending", 4000, 6000)]

    /// A folder without audio files (a text file only).
    var noAudio: URL { root.appendingPathComponent("noaudio") }
    /// 60 copies of a 1 s Ogg file.
    var big: URL { root.appendingPathComponent("big") }
    static let bigCount = 60
    /// Sources for the re-import test: 01-03.mp3 (album "Reimport Album", 8 s, tracks 1-3), 04.mp3 (track 4)
    /// and 03-retagged.mp3 (03.mp3 with the title "Changed Title").
    var reimport: URL { root.appendingPathComponent("reimport") }

    private static let instance = Once<LibraryMedia>(atExit: { try? FileManager.default.removeItem(at: $0.root) })

    /// Made once per test process, on a thread of its own (see ``Once``), removed when the process exits.
    static func shared() async throws -> LibraryMedia {
        try await instance.value { try LibraryMedia() }
    }

    private init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        root = URL(fileURLWithPath: base)
            .appendingPathComponent("lectern-lib-media-\(getpid())-\(UUID().uuidString.prefix(6))", isDirectory: true)
        let fm = FileManager.default
        func dir(_ path: String) throws -> URL {
            let url = root.appendingPathComponent(path, isDirectory: true)
            try fm.createDirectory(at: url, withIntermediateDirectories: true)
            return url
        }
        // Each MP3 a tone of its own: files of one sound in two folders are one file to the library (a copy).
        var nextFrequency = 400
        func mp3(_ url: URL, seconds: Double = 1, title: String? = nil, artist: String? = nil, album: String? = nil,
                 track: Int? = nil, disc: Int? = nil, frequency: Int? = nil) throws {
            nextFrequency += 15
            var arguments = ["-f", "lavfi", "-i", "sine=frequency=\(frequency ?? nextFrequency):duration=\(seconds)"]
            for (key, value) in [("title", title), ("artist", artist), ("album", album),
                                 ("track", track.map(String.init)), ("disc", disc.map(String.init))] {
                if let value { arguments += ["-metadata", "\(key)=\(value)"] }
            }
            try AudioFiles.ffmpeg(arguments + ["-c:a", "libmp3lame", url.path])
        }

        // gst-launch descriptions are split on spaces: make the files under a plain name, then move them.
        let scratch = root.appendingPathComponent("scratch")
        let untagged = try dir("tree/Untagged Tales")
        for (i, name) in ["1.ogg", "2.ogg", "10.ogg"].enumerated() {
            try AudioFiles.ogg(scratch.appendingPathExtension("ogg"), seconds: 1, frequency: 330 + 110 * i)
            try fm.moveItem(at: scratch.appendingPathExtension("ogg"), to: untagged.appendingPathComponent(name))
        }
        let flac = try dir("tree/Flac Book")
        for name in ["1.flac", "2.flac"] {
            try AudioFiles.flac(scratch.appendingPathExtension("flac"), seconds: 1)
            try fm.moveItem(at: scratch.appendingPathExtension("flac"), to: flac.appendingPathComponent(name))
        }
        let saga = try dir("tree/Saga")
        for (name, track) in [("b.mp3", 1), ("a.mp3", 2), ("c.mp3", 3)] {
            try mp3(saga.appendingPathComponent(name), title: Self.sagaTitles[track - 1], artist: "Ann Author",
                    album: "Mp3 Saga", track: track)
        }
        let chaptered = try dir("tree/Chaptered")
        var metadata = ";FFMETADATA1\ntitle=Chaptered\nalbum=Chaptered Book\nartist=Cy Writer\n"
        for chapter in Self.chapters {
            metadata += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(chapter.start)\nEND=\(chapter.end)\ntitle=\(chapter.title)\n"
        }
        let metadataFile = root.appendingPathComponent("chapters.txt")
        try metadata.write(to: metadataFile, atomically: true, encoding: .utf8)
        try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=6", "-i", metadataFile.path,
                               "-map_metadata", "1", "-map_chapters", "1", "-c:a", "aac",
                               chaptered.appendingPathComponent("book.m4b").path])
        let mixed = try dir("tree/Mixed")
        for (name, album) in [("m1.mp3", "Alpha Mix"), ("m2.mp3", "Beta Mix"), ("m3.mp3", "Alpha Mix")] {
            try mp3(mixed.appendingPathComponent(name), title: name, artist: "Bo Mixer", album: album)
        }
        let cd1 = try dir("tree/Author/Book/CD1")
        let cd2 = try dir("tree/Author/Book/CD2")
        try mp3(cd1.appendingPathComponent("01.mp3"), title: "Disc 1 Track 1", artist: "Cy Writer", album: "Disc Set", track: 1, disc: 1)
        try mp3(cd1.appendingPathComponent("02.mp3"), title: "Disc 1 Track 2", artist: "Cy Writer", album: "Disc Set", track: 2, disc: 1)
        try mp3(cd2.appendingPathComponent("01.mp3"), title: "Disc 2 Track 1", artist: "Cy Writer", album: "Disc Set", track: 1, disc: 2)
        try "not audio".write(to: try dir("tree/Notes").appendingPathComponent("readme.txt"), atomically: true, encoding: .utf8)

        try "not audio".write(to: try dir("noaudio").appendingPathComponent("readme.txt"), atomically: true, encoding: .utf8)

        let big = try dir("big")
        let one = big.appendingPathComponent("1.ogg")
        try AudioFiles.ogg(one, seconds: 1)
        for i in 2...Self.bigCount { try fm.copyItem(at: one, to: big.appendingPathComponent("\(i).ogg")) }

        let reimport = try dir("reimport")
        for track in 1...4 {
            try mp3(reimport.appendingPathComponent(String(format: "%02d.mp3", track)), seconds: 8, title: "Track \(track)",
                    artist: "Di Reader", album: "Reimport Album", track: track, frequency: 700 + 20 * track)
        }
        try mp3(reimport.appendingPathComponent("03-retagged.mp3"), seconds: 8, title: "Changed Title",
                artist: "Di Reader", album: "Reimport Album", track: 3, frequency: 760)
    }
}

// MARK: - Calls

struct ImportResult: Sendable {
    var job: UInt32
    var books: [Int64]
    var error: String
    /// (done, total) of this job's ImportProgress signals, in arrival order.
    var progress: [(done: Int64, total: Int64)]
    /// Indexes in the signal log.
    var firstProgressIndex: Int?
    var finishedIndex: Int
}

extension DaemonFixture {
    var libraryMedia: LibraryMedia { get async throws { try await LibraryMedia.shared() } }

    /// The library database the daemon uses (XDG_DATA_HOME points into the fixture's directory).
    var databasePath: String { directory.appending("xdg-data/lectern/library.sqlite").path }

    /// Calls a method of org.lectern.Library1 (or `interface`) on /org/lectern/Lectern1 at org.lectern.Lectern1.
    @discardableResult
    func lib(_ method: String, _ arguments: [DBusValue] = [], interface: String = Lib.library) async throws -> [DBusValue] {
        try await client.call(Lib.busName, path: Lib.path, interface: interface, member: method, arguments,
                              timeout: .seconds(10))
    }

    /// Calls a method of org.lectern.Bookmarks1.
    @discardableResult
    func marks(_ method: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await lib(method, arguments, interface: Lib.bookmarks)
    }

    /// A property of org.lectern.Library1.
    func libProperty(_ name: String) async throws -> DBusValue {
        let reply = try await client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Get",
                                          [.string(Lib.library), .string(name)], timeout: .seconds(10))
        guard let value = reply.first?.unwrapped else { throw FixtureError("Get \(name) returned \(reply)") }
        return value
    }

    func currentBook() async throws -> Int64 { try await libProperty("CurrentBook").int64 ?? -1 }

    /// Starts an import and waits for its ImportFinished.
    func importFolder(_ url: URL, shelf: String = "", timeout: Duration = .seconds(60)) async throws -> ImportResult {
        let mark = signals.mark
        let reply = try await lib("Import", [.string(url.path), .string(shelf)])
        guard case .uint32(let job)? = reply.first else { throw FixtureError("Import returned \(reply)") }
        guard let finished = await signals.waitFor(since: mark, timeout: timeout, {
            $0.interface == Lib.library && $0.member == "ImportFinished" && $0.arguments.first == .uint32(job)
        }) else {
            throw FixtureError("no ImportFinished for job \(job) of \(url.path):\n\(log)")
        }
        let progress = signals.since(mark).filter {
            $0.interface == Lib.library && $0.member == "ImportProgress" && $0.arguments.first == .uint32(job)
        }
        return ImportResult(job: job, books: finished.arguments[1].elements?.compactMap(\.int64) ?? [],
                            error: finished.arguments[2].string ?? "?",
                            progress: progress.map { ($0.arguments[1].int64 ?? -1, $0.arguments[2].int64 ?? -1) },
                            firstProgressIndex: progress.first?.index, finishedIndex: finished.index)
    }

    /// Imports and fails unless it worked; returns the book ids.
    @discardableResult
    func importOK(_ url: URL, shelf: String = "", sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Int64] {
        let result = try await importFolder(url, shelf: shelf)
        guard result.error.isEmpty, !result.books.isEmpty else {
            throw FixtureError("import of \(url.path) failed: '\(result.error)', books \(result.books)")
        }
        return result.books
    }

    func getBook(_ id: Int64) async throws -> [String: DBusValue] {
        guard let book = try await lib("GetBook", [.int64(id)]).first?.stringKeyedDictionary else {
            throw FixtureError("GetBook \(id) returned no dictionary")
        }
        return book
    }

    /// GetBook's file_list.
    func files(of id: Int64) async throws -> [[String: DBusValue]] {
        try await getBook(id)["file_list"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
    }

    /// The fields of a listed book, in the order dbus/org.lectern.Library1.xml gives them (ListBooks): GetBook's keys.
    static let listedFields = [
        "id", "shelf", "title", "author", "narrator", "cover", "source", "state", "files", "missing",
        "duration", "position_file", "position_offset", "finished", "added", "modified", "last_played",
    ]
    static let listedSignature = "a(xxssssssuuxxxbxxx)"

    /// The books of a listing's reply (ListBooks, ListBooksPage, Find, Search), each by the names of its fields.
    /// A reply without the documented signature is an issue of the test (and gives no books).
    static func books(_ reply: DBusValue?, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: DBusValue]] {
        guard let reply, reply.type.signature == listedSignature else {
            Issue.record("a listing answered \(reply.map { $0.type.signature } ?? "nothing"), not \(listedSignature)",
                         sourceLocation: sourceLocation)
            return []
        }
        return reply.elements?.compactMap { $0.fields.map { Dictionary(uniqueKeysWithValues: zip(listedFields, $0)) } } ?? []
    }

    /// Every book, by title: ListBooksPage(0, recursive: true), a page after the other.
    func allBooks() async throws -> [[String: DBusValue]] {
        var books: [[String: DBusValue]] = []
        while true {
            let page = try await lib("ListBooksPage", [.int64(0), .boolean(true), .string("title"), .uint32(UInt32(books.count)), .uint32(200)])
            let more = Self.books(page.first)
            books += more
            if more.isEmpty || books.count >= Int(page.dropFirst().first?.int64 ?? 0) { return books }
        }
    }

    func bookID(titled title: String) async throws -> Int64 {
        guard let id = try await allBooks().first(where: { $0["title"]?.string == title })?["id"]?.int64 else {
            throw FixtureError("no book titled \(title)")
        }
        return id
    }

    func allShelves() async throws -> [[String: DBusValue]] {
        try await lib("ListAllShelves").first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
    }

    func bookmarks(of book: Int64) async throws -> [[String: DBusValue]] {
        try await marks("ListBookmarks", [.int64(book)]).first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
    }

    /// Everything a client can read of the library: shelves, books (with files and chapters) and bookmarks.
    func librarySnapshot() async throws -> [DBusValue] {
        var out: [DBusValue] = try await lib("ListAllShelves")
        for book in try await allBooks() {
            let id = book["id"]?.int64 ?? 0
            out += try await lib("GetBook", [.int64(id)])
            out += try await marks("ListBookmarks", [.int64(id)])
        }
        out += try await lib("ListShelves", [.int64(0)])
        return out
    }

    /// Library signals (not the barrier's, not PropertiesChanged) since `mark`.
    func librarySignals(since mark: Int) -> [RecordedSignal] {
        signals.since(mark).filter { $0.path == Lib.path && ($0.interface == Lib.library || $0.interface == Lib.bookmarks) }
    }

    /// Values CurrentBook took in PropertiesChanged since `mark`.
    func currentBookChanges(since mark: Int) -> [Int64] {
        signals.since(mark).filter { $0.path == Lib.path && $0.changedInterface == Lib.library }
            .compactMap { $0.changed["CurrentBook"]?.int64 }
    }

    /// Polls CurrentBook until it is `book` (a restarted daemon resumes its book after taking its names).
    @discardableResult
    func waitForCurrentBook(_ book: Int64, timeout: Duration = .seconds(5)) async throws -> Int64 {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = try await currentBook()
            if current == book || ContinuousClock.now >= deadline { return current }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The file id of a book's file whose path ends with `suffix`.
    func fileID(of book: Int64, endingWith suffix: String) async throws -> Int64 {
        guard let id = try await files(of: book).first(where: { $0["path"]?.string?.hasSuffix(suffix) == true })?["id"]?.int64 else {
            throw FixtureError("book \(book) has no file ending with \(suffix)")
        }
        return id
    }

    /// SetPosition on the current track (µs), waiting for its Seeked.
    func setPosition(_ microseconds: Int64) async throws {
        guard let track = try await trackID() else { throw FixtureError("no current track") }
        let mark = signals.mark
        try await call("SetPosition", [.objectPath(track), .int64(microseconds)])
        guard await signals.waitFor(since: mark, { $0.seekedPosition != nil }) != nil else {
            throw FixtureError("no Seeked after SetPosition \(microseconds)")
        }
    }

    /// Activates `book` paused and puts its place 3 s into its third file, `third`, as a listener would (Next twice,
    /// then a seek); the offset the book session saved.
    func placeInThirdFile(of book: Int64, _ third: Int64) async throws -> Int64 {
        let name = try await files(of: book).first { $0["id"]?.int64 == third }?["path"]?.string ?? "?"
        try await lib("ActivateBook", [.int64(book), .boolean(false)])
        try await call("Next")
        try await call("Next")
        try await waitForURL(endingWith: "/" + URL(fileURLWithPath: name).lastPathComponent)
        try await setPosition(3_000_000)
        return try await waitForSavedPosition(of: book, file: third, near: 3_000_000)
    }

    /// Polls GetBook until its saved position is in `file`, near `offset` (the session saves asynchronously).
    @discardableResult
    func waitForSavedPosition(of book: Int64, file: Int64, near offset: Int64, within tolerance: Int64 = 300_000,
                              timeout: Duration = .seconds(5)) async throws -> Int64 {
        let deadline = ContinuousClock.now + timeout
        while true {
            let b = try await getBook(book)
            let saved = b["position_offset"]?.int64 ?? -1
            if b["position_file"]?.int64 == file && near(saved, offset, within: tolerance) { return saved }
            if ContinuousClock.now >= deadline {
                throw FixtureError("book \(book) saved at file \(b["position_file"]?.int64 ?? -1) offset \(saved), not \(file)@\(offset)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    // MARK: Restarting the daemon

    /// Starts a new lecternd on the same bus, environment and database (after the fixture's own one, or a previous
    /// replacement, was stopped) and waits for its MPRIS name. The caller stops it (`stopReplacement`).
    func startReplacementDaemon() async throws -> Subprocess {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await nameHasOwner(MPRIS.lecternName) {
            guard ContinuousClock.now < deadline else { throw FixtureError("the old daemon still owns \(MPRIS.lecternName)") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let process = try Subprocess(lecterndPath, daemonArguments, environment: environment, stdout: .appendingToFile(daemonLog),
                                     stderr: .appendingToFile(daemonLog))
        while !(try await nameHasOwner(MPRIS.busName)) {
            guard process.isRunning else { throw FixtureError("the new lecternd exited: \(process.termination.map { "\($0)" } ?? "?")\n\(log)") }
            guard ContinuousClock.now < deadline + .seconds(10) else {
                let stacks = await process.threadStacks()
                process.kill()
                throw FixtureError("the new lecternd did not own \(MPRIS.busName) in time:\n\(log)\nIts threads:\n\(stacks)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return process
    }

    /// SIGTERM to a replacement daemon; its exit status (nil: killed after 15 s).
    @discardableResult
    func stopReplacement(_ process: Subprocess) async -> Int32? {
        process.terminate()
        let status = await process.waitForExit(timeout: .seconds(15))
        if status == nil {
            process.kill()
            _ = await process.waitForExit(timeout: .seconds(5))
        }
        return status
    }

    /// `PRAGMA integrity_check` of the library file, through python3's sqlite3 module.
    func integrityCheck() async throws -> String { try await sqliteIntegrityCheck(databasePath) }
}

extension RecordedSignal {
    /// A Library1/Bookmarks1 signal named `member` whose first argument is `id`.
    func isLibrary(_ member: String, _ id: Int64? = nil) -> Bool {
        path == Lib.path && (interface == Lib.library || interface == Lib.bookmarks) && self.member == member
            && (id == nil || arguments.first?.int64 == id)
    }
}

/// `String(repeating:count:)` of a name one character too long (the limit is 1024).
let tooLongName = String(repeating: "n", count: 1025)
