import DBus

/// lecternd as a client sees it: the owner of Lectern's bus name, which serves Lectern's interfaces (dbus/*.xml) and
/// MPRIS. One method a call the CLI makes; each reply decoded into a type of its own (``API``). Failures are
/// ``ClientError``s.
public struct LecternClient: Sendable {
    public static let busName = "org.lectern.Lectern1"
    let connection: BusConnection

    /// Connects to the bus at `busAddress` (the session bus when nil). When lecternd is not running, asks the bus to
    /// start it (D-Bus activation, as for any other client) and waits until it has restored its book.
    public static func connect(busAddress: String?) async throws -> LecternClient {
        let connection: BusConnection
        do {
            connection = try busAddress.map(BusConnection.init(address:)) ?? BusConnection.session()
        } catch {
            throw ClientError(.unreachable, "cannot reach the D-Bus session bus: \(error)")
        }
        let client = LecternClient(connection: connection)
        let running = try await client.send("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                            "NameHasOwner", [.string(busName)]).first?.bool ?? false
        if !running {
            do {
                _ = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                              member: "StartServiceByName", [.string(busName), .uint32(0)], timeout: .seconds(30))
            } catch let error as BusError where error.name == "org.freedesktop.DBus.Error.ServiceUnknown" {
                throw ClientError(.unreachable, "lecternd is not running on this bus, and the bus cannot start it (install it with "
                                  + "`make install`, or start it with `make run` or `lecternd`)")
            } catch let error as BusError {
                throw ClientError(.unreachable, "lecternd could not be started: \(error.message.isEmpty ? error.name : error.message)")
            }
            // Lectern's own object answers once the daemon has restored its book: what follows reads that book.
            // Opening it can take long on a machine busy starting a session: as long as the start itself may.
            _ = try await client.get(API.library.currentBook, timeout: .seconds(30))
        }
        return client
    }

    // MARK: - MPRIS

    /// MPRIS's transport calls.
    public enum Transport: String, Sendable {
        case play = "Play", pause = "Pause", playPause = "PlayPause", stop = "Stop", next = "Next", previous = "Previous"
    }

    public func player(_ call: Transport) async throws { try await self.call(.mprisPlayer, call.rawValue) }
    public func openURI(_ uri: String) async throws { try await call(.mprisPlayer, "OpenUri", [.string(uri)]) }
    /// Moves by `offset` µs (negative: back) within the track.
    public func seek(by offset: Int64) async throws { try await call(.mprisPlayer, "Seek", [.int64(offset)]) }
    /// Goes to `position` µs into `track` (``Track/id``).
    public func setPosition(track: ObjectPath, _ position: Int64) async throws {
        try await call(.mprisPlayer, "SetPosition", [.objectPath(track), .int64(position)])
    }
    public func playerStatus() async throws -> PlayerStatus { try await get(API.mpris.status) }
    public func track() async throws -> Track { try await get(API.mpris.metadata) }
    public func volume() async throws -> Double { try await get(API.mpris.volume) }
    public func setVolume(_ volume: Double) async throws { try await set(.mprisPlayer, "Volume", .double(volume)) }

    /// The desktop's org.freedesktop.Application on lecternd (what desktops that honour DBusActivatable call).
    public func activateApplication(opening uris: [String]) async throws {
        let (name, path, interface) = ("org.lectern.Lectern", "/org/lectern/Lectern", "org.freedesktop.Application")
        if uris.isEmpty {
            _ = try await send(name, path, interface, "Activate", [.emptyVardict])
        } else {
            _ = try await send(name, path, interface, "Open", [.strings(uris), .emptyVardict])
        }
    }

    // MARK: - org.lectern.Player1

    /// Player1's calls without arguments.
    public enum Listening: String, Sendable {
        case skipForward = "SkipForward", skipBackward = "SkipBackward", nextChapter = "NextChapter",
             previousChapter = "PreviousChapter", sleepAtChapterEnd = "SleepAtChapterEnd", cancelSleepTimer = "CancelSleepTimer"
    }

    public func listening(_ call: Listening) async throws { try await self.call(.player, call.rawValue) }
    public func listeningStatus() async throws -> ListeningStatus { try await call(API.player.status) }
    /// Moves by `offset` µs (negative: back) through the book, across files.
    public func skip(by offset: Int64) async throws { try await call(.player, "Skip", [.int64(offset)]) }
    /// Goes to file `file` (from 0) at `position` µs.
    public func jump(toFile file: Int32, at position: Int64) async throws {
        try await call(.player, "JumpToFile", [.int32(file), .int64(position)])
    }
    /// Goes to chapter `chapter` (from 0, across the book).
    public func goToChapter(_ chapter: Int32) async throws { try await call(.player, "GoToChapter", [.int32(chapter)]) }
    /// Pauses after `duration` µs of playing time.
    public func setSleepTimer(_ duration: Int64) async throws { try await call(.player, "SetSleepTimer", [.int64(duration)]) }
    public func speed() async throws -> Double { try await get(API.player.speed) }
    public func setSpeed(_ speed: Double) async throws { try await set(.player, "Speed", .double(speed)) }
    /// The line of synced lyrics heard now ("" without one).
    public func lyricsLine() async throws -> String { try await get(API.player.lyricsLine) }

    /// The lines of synced lyrics as playback reaches them (LyricsLineChanged), from now until lecternd goes away.
    public func lyricsLines() async throws -> some AsyncSequence<LyricsLine, any Error> {
        let decoding = API.player.lyricsLineChanged
        return try await connection.signals(MatchRule(sender: Self.busName, interface: APIInterface.player.name,
                                                      member: "LyricsLineChanged"))
            .map { try Self.decode($0.arguments, decoding) }
    }

    /// Every signal of lecternd's that changes what `lectern status` shows: PropertiesChanged (of MPRIS and
    /// org.lectern.Player1) and Seeked.
    public func statusChanges() async throws -> some AsyncSequence<Void, Never> & Sendable {
        try await connection.signals(MatchRule(sender: Self.busName))
            .filter { ["PropertiesChanged", "Seeked"].contains($0.member ?? "") }
            .map { _ in }
    }

    // MARK: - org.lectern.Library1

    public func shelves() async throws -> [Shelf] { try await call(API.library.shelves) }
    /// A new shelf in `parent` (0: the top level); its id.
    public func createShelf(_ name: String, in parent: Int64) async throws -> Int64 {
        try await call(API.library.createdShelf, [.string(name), .int64(parent)])
    }
    public func renameShelf(_ id: Int64, to name: String) async throws { try await call(.library, "RenameShelf", [.int64(id), .string(name)]) }
    public func moveShelf(_ id: Int64, to parent: Int64) async throws { try await call(.library, "MoveShelf", [.int64(id), .int64(parent)]) }
    public func deleteShelf(_ id: Int64, recursive: Bool) async throws {
        try await call(.library, "DeleteShelf", [.int64(id), .boolean(recursive)])
    }

    /// Every book on `shelf` (0: the top level) and, when `recursive`, below it, that matches `query`, in `order`
    /// (ListBooksPage's). Without a query, ListBooksPage: what a lecternd of an earlier version lists too.
    public func books(shelf: Int64, recursive: Bool, matching query: BookQuery = BookQuery(), order: String = "title") async throws -> [ListedBook] {
        try await pages { offset, size in
            if query.isEmpty {
                try await call(API.library.booksPage, [.int64(shelf), .boolean(recursive), .string(order), .uint32(offset), .uint32(size)])
            } else {
                try await call(API.library.booksMatching, [.int64(shelf), .boolean(recursive), query.value, .string(order), .uint32(offset),
                                                           .uint32(size)])
            }
        }.books
    }

    /// The books that have the words of `text` and match `query`, the best matches first, up to `limit` of them; and
    /// how many match in all.
    public func search(_ text: String, _ query: BookQuery, upTo limit: Int = .max) async throws -> (books: [ListedBook], total: Int) {
        try await pages(upTo: limit) { offset, size in
            try await call(API.library.search, [.string(text), query.value, .uint32(offset), .uint32(size)])
        }
    }

    /// The books of a listing a page after the other, up to `limit` of them; and how many there are in all.
    private func pages(upTo limit: Int = .max, _ page: (_ offset: UInt32, _ size: UInt32) async throws -> BooksPage)
        async throws -> (books: [ListedBook], total: Int) {
        var books: [ListedBook] = []
        while true {
            // 200: the most a page holds.
            let next = try await page(UInt32(clamping: books.count), UInt32(min(200, limit - books.count)))
            books += next.books
            if next.books.isEmpty || books.count >= min(Int(next.total), limit) { return (books, Int(next.total)) }
        }
    }

    public func book(_ id: Int64) async throws -> BookDetails { try await call(API.library.book, [.int64(id)]) }
    public func renameBook(_ id: Int64, to title: String) async throws { try await call(.library, "RenameBook", [.int64(id), .string(title)]) }
    public func moveBook(_ id: Int64, to shelf: Int64) async throws { try await call(.library, "MoveBook", [.int64(id), .int64(shelf)]) }
    /// Moves every book on `shelf` (0: the top level) and, when `recursive`, below it, that matches `query`, to `target`
    /// (0: the top level), in one go; the books moved.
    public func moveBooks(shelf: Int64, recursive: Bool, matching query: BookQuery, to target: Int64) async throws -> [Int64] {
        try await call(API.library.movedBooks, [.int64(shelf), .boolean(recursive), query.value, .int64(target)])
    }
    /// Every series, by name, with how many books it has.
    public func allSeries() async throws -> [Series] { try await call(API.library.series) }
    /// Puts the book in `series` at `part` ("" for none).
    public func setBookSeries(_ id: Int64, _ series: String, part: String) async throws {
        try await call(.library, "SetBookSeries", [.int64(id), .string(series), .string(part)])
    }
    public func setBookFinished(_ id: Int64, _ finished: Bool) async throws {
        try await call(.library, "SetBookFinished", [.int64(id), .boolean(finished)])
    }
    public func deleteBook(_ id: Int64) async throws { try await call(.library, "DeleteBook", [.int64(id)]) }
    /// Puts the book's files in this order: each of its file ids once.
    public func reorderFiles(of id: Int64, _ files: [Int64]) async throws {
        try await call(.library, "ReorderFiles", [.int64(id), .array(.int64, files.map(DBusValue.int64))])
    }
    public func setBookSettings(_ id: Int64, _ changes: BookSettingsChange) async throws {
        try await call(.library, "SetBookSettings", [.int64(id), changes.value])
    }
    public func measureLoudness(_ id: Int64) async throws { try await call(.library, "MeasureLoudness", [.int64(id)]) }
    /// Makes the book current, at its saved place; playing if `play`.
    public func activateBook(_ id: Int64, play: Bool) async throws { try await call(.library, "ActivateBook", [.int64(id), .boolean(play)]) }

    /// The values of `property` among the books matching `query`.
    public func groups(_ query: BookQuery, by property: String) async throws -> [BookGroup] {
        try await call(API.library.groups, [query.value, .string(property)])
    }
    /// One of the books (`what` "book") or files ("file") matching `query`, picked at random; lecternd refuses
    /// another `what`.
    public func random(_ what: String, _ query: BookQuery) async throws -> RandomPick {
        if what == "book" { return .book(try await call(API.library.randomBook, [query.value, .string(what)])) }
        return .file(try await call(API.library.randomFile, [query.value, .string(what)]))
    }

    /// The events of imports (ImportProgress, ImportFinished): subscribed to before ``startImport(_:shelf:)``, so that
    /// none is missed.
    public func importEvents() async throws -> some AsyncSequence<ImportEvent, any Error> {
        let (progress, finished) = (API.library.importProgress, API.library.importFinished)
        return try await connection.signals(MatchRule(interface: APIInterface.library.name, path: APIInterface.lecternPath))
            .compactMap { signal in
                switch signal.member {
                case "ImportProgress": .progress(try Self.decode(signal.arguments, progress))
                case "ImportFinished": .finished(try Self.decode(signal.arguments, finished))
                default: nil
                }
            }
    }

    /// Starts importing `path` onto the shelf at `shelf` ("": where the books are); the job, which the events name.
    public func startImport(_ path: String, shelf: String) async throws -> UInt32 {
        try await call(API.library.importJob, [.string(path), .string(shelf)])
    }

    /// The current book's id; 0 for none.
    public func currentBook() async throws -> Int64 { try await get(API.library.currentBook) }
    public func offlineBooks() async throws -> UInt32 { try await get(API.library.offlineBooks) }
    public func missingFiles() async throws -> UInt32 { try await get(API.library.missingFiles) }

    // MARK: - org.lectern.Bookmarks1

    /// A bookmark where the book is; its id.
    public func addBookmark(to book: Int64, title: String, note: String) async throws -> Int64 {
        try await call(API.bookmarks.added, [.int64(book), .string(title), .string(note)])
    }
    public func bookmarks(of book: Int64) async throws -> [Bookmark] { try await call(API.bookmarks.bookmarks, [.int64(book)]) }
    public func renameBookmark(_ id: Int64, to title: String) async throws {
        try await call(.bookmarks, "RenameBookmark", [.int64(id), .string(title)])
    }
    public func setBookmarkNote(_ id: Int64, _ note: String) async throws {
        try await call(.bookmarks, "SetBookmarkNote", [.int64(id), .string(note)])
    }
    public func deleteBookmark(_ id: Int64) async throws { try await call(.bookmarks, "DeleteBookmark", [.int64(id)]) }
    public func jumpToBookmark(_ id: Int64) async throws { try await call(.bookmarks, "JumpToBookmark", [.int64(id)]) }
    /// Adds `bookmarks` to `book`, skipping those already there.
    public func importBookmarks(to book: Int64, _ bookmarks: [NewBookmark]) async throws -> ImportedBookmarks {
        try await call(API.bookmarks.imported, [.int64(book), .array(.dictionary(key: .string, value: .variant), bookmarks.map(\.value))])
    }

    // MARK: - org.lectern.History1

    public func undo() async throws -> UndoPlace { try await call(API.history.undo) }
    /// The book's undo stack (0: the current book's), newest first.
    public func undoPlaces(of book: Int64) async throws -> [UndoPlace] { try await call(API.history.undoList, [.int64(book)]) }
    /// The sessions of `book` (0: every book) that started in the span (µs since the epoch; 0: no bound).
    public func sessions(of book: Int64, from: Int64, to: Int64) async throws -> [Session] {
        try await call(API.history.sessions, [.int64(book), .int64(from), .int64(to)])
    }
    public func stats(from: Int64, to: Int64) async throws -> ListeningStats { try await call(API.history.stats, [.int64(from), .int64(to)]) }

    // MARK: - org.lectern.Configuration1

    public func settingValues() async throws -> [SettingValue] { try await call(API.configuration.values) }
    public func reload() async throws -> Reloaded { try await call(API.configuration.reloaded) }
    public func libraryFolders() async throws -> [String] { try await get(API.configuration.libraryFolders) }

    // MARK: - org.lectern.Cast1

    /// Whether lecternd is on the home network, and why not ("" while it is).
    public func network() async throws -> (on: Bool, problem: String) {
        (try await get(API.cast.network), try await get(API.cast.problem))
    }
    /// The home network's renderers, by name.
    public func renderers() async throws -> [CastRenderer] { try await get(API.cast.renderers) }

    // MARK: - org.lectern.Prompts1

    /// Has lecternd speak `what` ("status", "time-left", "chapter"); the text spoken.
    public func say(_ what: String) async throws -> String { try await call(API.prompts.said, [.string(what)]) }
    public func promptsEnabled() async throws -> Bool { try await get(API.prompts.enabled) }
    public func setPromptsEnabled(_ enabled: Bool) async throws { try await set(.prompts, "Enabled", .boolean(enabled)) }
    public func promptLanguage() async throws -> String { try await get(API.prompts.language) }
    public func promptVoice() async throws -> String { try await get(API.prompts.voice) }
    /// Why prompts cannot be heard; "" while they can.
    public func promptProblem() async throws -> String { try await get(API.prompts.problem) }

    // MARK: - Calling

    private func call(_ interface: APIInterface, _ method: String, _ arguments: [DBusValue] = []) async throws {
        _ = try await send(Self.busName, interface.path, interface.name, method, arguments)
    }

    private func call<Value>(_ decoding: Decoding<Value>, _ arguments: [DBusValue] = []) async throws -> Value {
        guard case .reply(let interface, let method) = decoding.source else { preconditionFailure("\(decoding.source) is not a reply") }
        return try Self.decode(try await send(Self.busName, interface.path, interface.name, method, arguments), decoding)
    }

    /// A property (Get), or all of an interface's (GetAll).
    private func get<Value>(_ decoding: Decoding<Value>, timeout: Duration = .seconds(10)) async throws -> Value {
        let (interface, member, arguments): (APIInterface, String, [DBusValue])
        switch decoding.source {
        case .property(let owner, let name): (interface, member, arguments) = (owner, "Get", [.string(owner.name), .string(name)])
        case .properties(let owner): (interface, member, arguments) = (owner, "GetAll", [.string(owner.name)])
        case .reply, .signal: preconditionFailure("\(decoding.source) is not a property")
        }
        return try Self.decode(try await send(Self.busName, interface.path, "org.freedesktop.DBus.Properties", member,
                                              arguments, timeout: timeout), decoding)
    }

    private func set(_ interface: APIInterface, _ property: String, _ value: DBusValue) async throws {
        _ = try await send(Self.busName, interface.path, "org.freedesktop.DBus.Properties", "Set",
                           [.string(interface.name), .string(property), .variant(value)])
    }

    /// `arguments` as `decoding` reads them; of another form, the error that asks for lecternd to be restarted.
    private static func decode<Value>(_ arguments: [DBusValue], _ decoding: Decoding<Value>) throws -> Value {
        do {
            return try decoding.decode(arguments)
        } catch is ReplyMismatch {
            throw ClientError(.otherVersion, "lecternd \(decoding.what) in a form this lectern does not read (another version of "
                              + "Lectern): restart lecternd")
        }
    }

    /// Sends a call and waits for its reply; the bus's errors in the user's words.
    private func send(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
                      timeout: Duration = .seconds(10)) async throws -> [DBusValue] {
        do {
            return try await connection.call(destination, path: path, interface: interface, member: member, arguments,
                                             timeout: timeout)
        } catch let error as BusError {
            if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                throw ClientError(.unreachable, "lecternd is not running on this bus (start it with `make run` or `lecternd`)")
            }
            if error.name == "org.freedesktop.DBus.Error.NoReply" || error.name == "org.freedesktop.DBus.Error.Disconnected" {
                throw ClientError(.unreachable, "lecternd did not answer: \(error.message.isEmpty ? error.name : error.message)")
            }
            throw ClientError(.refused, error.message.isEmpty ? error.name : error.message)
        }
    }
}

/// What Random picked.
public enum RandomPick: Sendable {
    case book(BookDetails)
    case file(BookFile)
}

/// An import's progress, or its end.
public enum ImportEvent: Sendable {
    case progress(ImportProgress)
    case finished(ImportFinished)
}
