import FolderWatch
import GStreamer
import Foundation
import LecternCore
import LecternLibrary
import LecternMedia
import Logging
import Threads

/// The current book, between the library and the player: activating a book opens its files in the player at the
/// saved position with its settings (``BookPlayback``); what the player then does is kept by a ``PlaybackRecorder``
/// (the position at every tick of the player, twice a second: ``Player/tickInterval``, and at every pause, seek,
/// stop, book change and shutdown; the settings clients change; the listening history; the automatic bookmarks);
/// an undo goes back along the book's ``UndoStack``.
///
/// The player's observer is synchronous and must not do I/O, so events reach this actor through a stream
/// (`record`), and the database is written here, never on the player or the D-Bus thread. The actor runs on the
/// database's writer thread (a ``ThreadExecutor``, shared with ``LibraryWriter``), so a write that waits for the
/// disk holds none of the cooperative pool's threads.
public actor BookSession {
    private let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public let library: Library
    let player: Player
    let logger: Logger
    /// The imports an activation waits for when they may find its book's files, and for how long at most.
    let underway: ImportsUnderway
    let importWait: Duration
    /// Told what clients should hear of: the current book (the MPRIS Playlists face follows it), a book
    /// finished, an automatic bookmark.
    let announce: @Sendable (News) -> Void

    public enum News: Sendable {
        case currentBook(Book?)
        case bookChanged(Int64)
        case bookmarksChanged(Int64)
        /// Files of the book left out at activation because they cannot be played, each with whether it is missing
        /// (else unreadable, empty or not audio).
        case filesSkipped([(URL, missing: Bool)])
    }

    private(set) var book: Book?
    /// The book paused at its place for a stream (``playStreams(_:)``): current in the library still, and what an undo
    /// returns to; nil once a book is activated.
    private(set) var setAside: Book?
    /// The current book's files in the queue, by id (each of the player's items carries its file's id).
    private var files: [Int64: BookFile] = [:]
    /// Keeps what the player does with the current book.
    private var recorder: PlaybackRecorder
    /// The daemon is stopping: see ``PlaybackRecorder/closed``.
    private var closed: Bool { recorder.closed }
    /// Activations begun: one that finds a later one begun when its files' words are read gives way to it.
    private var activations = 0
    /// Activations begun and not yet done: an import's reopening of the current book gives way to them.
    private var activationsUnderway = 0
    /// The current book was activated to play while its place's file was not where the library has it: it plays
    /// when an import finds its files (``booksImported(_:)``).
    private var playWhenFound = false

    private let events: AsyncStream<PlayerEvent>
    /// Whether a book of a series played to its end is followed by the next one (`series-continue`), asked each time.
    private let continuesSeries: @Sendable () -> Bool

    /// `events`: the player's events, yielded by its observer (which must not wait).
    public init(library: Library, player: Player, executor: ThreadExecutor, events: AsyncStream<PlayerEvent>, logger: Logger,
         underway: ImportsUnderway, importWait: Duration, continuesSeries: @escaping @Sendable () -> Bool = { false },
         announce: @escaping @Sendable (News) -> Void) {
        self.continuesSeries = continuesSeries
        self.executor = executor
        self.library = library
        self.player = player
        self.underway = underway
        self.importWait = importWait
        self.events = events
        self.logger = logger
        self.announce = announce
        recorder = PlaybackRecorder(library: library, view: player.view, logger: logger, announce: announce)
    }

    /// Handles the player's events (saving the position at each of its ticks while playing) until they end or
    /// the task is cancelled.
    public func run() async {
        for await event in events {
            recorder.record(event, book: &book, files: files)
            if case .finished = event, !closed, continuesSeries(), let id = book?.id { await playNextInSeries(after: id) }
        }
    }

    /// `bookId` was played to its end: the next book of its series not finished plays from its place.
    private func playNextInSeries(after bookId: Int64) async {
        do {
            guard let next = try library.nextInSeries(after: bookId) else { return }
            logger.info("a book of a series finished: playing the next", metadata: ["book": "\(bookId)", "next": "\(next)"])
            try await activate(next, play: true)
        } catch {
            logger.warning("could not play the next book of the series", metadata: ["book": "\(bookId)", "error": "\(error)"])
        }
    }

    // MARK: - Activating

    /// What is left of an activation that waits for an import (``activation(of:play:)``).
    public typealias PendingActivation = @Sendable () async throws -> Void

    /// Activates `bookId` (``activate(_:play:undoable:)``) at once, and returns nil, when its files are on disk, or
    /// when no import underway may find those that are not. Otherwise returns the activation, to run off the D-Bus
    /// call queue: it waits for those imports, at most ``importWait``, then activates the book with the files they
    /// found (a book moved while lecternd was stopped, activated before the start-up rescan finds it at its new
    /// paths: its place and bookmarks follow its files), unless another book was made current meanwhile.
    public nonisolated func activation(of bookId: Int64, play: Bool) async throws -> PendingActivation? {
        let notOnDisk = try library.files(of: bookId).filter { !$0.available || !FileManager.default.fileExists(atPath: $0.path) }
            .map(\.path)
        guard underway.mayFind(any: notOnDisk) else {
            try await activate(bookId, play: play)
            return nil
        }
        return { try await self.activate(bookId, play: play, onceFound: notOnDisk) }
    }

    /// Waits for the imports underway that may find `paths` (``activation(of:play:)``), then activates `bookId`.
    private func activate(_ bookId: Int64, play: Bool, onceFound paths: [String]) async throws {
        let current = book?.id
        logger.info("the book's files are not on disk: waiting for the import that may find them",
                    metadata: ["book": "\(bookId)", "files": "\(paths.count)"])
        if await !underway.wait(for: paths, atMost: importWait) {
            logger.warning("the import that may find the book's files is not done: activating it with those there are",
                           metadata: ["book": "\(bookId)", "waited": "\(importWait)"])
        }
        // Another book made current meanwhile is the listener's later choice: it stays. (This one opened again by
        // the import that found its files is not.)
        guard book?.id == current || book?.id == bookId, !closed else { return }
        try await activate(bookId, play: play)
    }

    /// Makes `bookId` current: its files that can be played (missing ones are left out, each told as a
    /// FileFailed), at its saved position (from the start when it was finished), with its settings; playing or
    /// paused. When the position's file is missing, playing starts at the next file; paused, the place stays in that
    /// file until the listener plays (it may be back by then: a disk mounted again). When the library has that file
    /// present but it is not on disk (moved, and no import has seen it yet), the book opens paused at its place and
    /// plays once an import finds the file. An offline book fails.
    /// `undoable`: the place in the book left goes on the new book's undo stack (not for an undo itself).
    /// `opened`: a file of the book a client opened (``BookOpener``): the book plays from that file's start unless its
    /// place is in that file, and the place it leaves is an undo step.
    func activate(_ bookId: Int64, play: Bool, undoable: Bool = true, opened: Int64? = nil) async throws {
        activationsUnderway += 1
        defer { activationsUnderway -= 1 }
        setAside = nil
        recorder.savePosition(book: book, files: files)
        recorder.recordHeardSoFar(book: book)
        let left = undoable ? currentPlace().flatMap { $0.book.id == bookId ? nil : $0 } : nil
        var book = try library.book(bookId)
        // Offline as last seen: played all the same when its folder is there again (the flag follows at the next look).
        if book.offline && !Self.isReachable(book) {
            throw LibraryError.invalidArgument("“\(book.title)” is offline: \(book.sourcePath ?? "its folder") is on a disk that is "
                                               + "not mounted, or in a library folder that is gone")
        }
        let all = try library.files(of: bookId)
        // A file of it opened, not the one its place is in: it starts there.
        var movedFrom: (file: Int64, offset: Int64)?
        if let opened, all.contains(where: { $0.id == opened }), book.finished || book.positionFileId != opened {
            if !book.finished, let file = book.positionFileId { movedFrom = (file, book.positionOffset) }
            if book.finished { try? library.setFinished(bookId, false) }
            (book.positionFileId, book.positionOffset, book.finished) = (opened, 0, false)
        }
        // Where it starts: its place, or the first file (finished, or never played).
        let placeId = book.finished ? all.first?.id : book.positionFileId ?? all.first?.id
        // The place's file is not where the library has it, and no import has found it gone: moved while lecternd was
        // stopped, or before the watch saw it. Opened paused at its place, and played once an import finds it.
        let waiting = play && all.contains { $0.id == placeId && $0.available && !FileManager.default.fileExists(atPath: $0.path) }
        let paused = !play || waiting
        let available = all.filter { file in
            (paused && file.id == placeId) || file.available && MediaOpener.isPlayableFile(URL(fileURLWithPath: file.path))
        }
        let skipped = all.filter { file in !available.contains { $0.id == file.id } }
        if !skipped.isEmpty {
            logger.warning("skipping files that cannot be played (missing, unreadable, empty or not a file)",
                           metadata: ["book": "\(bookId)", "files": "\(skipped.map(\.path))"])
            announce(.filesSkipped(skipped.map { file in
                let missing = !file.available || !FileManager.default.fileExists(atPath: file.path)
                return (URL(fileURLWithPath: file.path), missing)
            }))
        }
        guard !available.isEmpty else { throw LibraryError.invalidArgument("none of the files of “\(book.title)” can be found") }
        var startIndex = available.firstIndex { $0.id == book.positionFileId } ?? 0
        var offset = book.positionOffset
        if startIndex == 0 && book.positionFileId != available.first?.id {
            // The place's file is left out: the listener goes on with the file after it.
            let place = all.first { $0.id == book.positionFileId }?.position
            startIndex = place.flatMap { place in available.firstIndex { $0.position > place } } ?? 0
            offset = 0
        }
        if book.finished {
            startIndex = 0
            offset = 0
            try? library.setFinished(bookId, false)
            book.finished = false
        }
        let cover = book.coverPath.map { URL(fileURLWithPath: $0) }
        let chapters = try library.chapters(of: bookId)
        let shuffled = try library.shuffleOrder(of: bookId)
        let tagLyrics = try library.lyrics(of: bookId)
        // Read and parsed off this thread (the database's writer: saves wait behind whatever is here), before the
        // queue is opened: the current file's first Metadata has its text. A later activation wins over this one.
        activations += 1
        let activation = activations
        let words = await Self.words(of: available.map { ($0.path, $0.id.flatMap { tagLyrics[$0] }) }, logger: logger)
        guard activation == activations else { return }
        let items = zip(available, words).map { file, lyrics in
            MediaItem(id: 0, url: URL(fileURLWithPath: file.path), title: file.title, artists: book.author.map { [$0] } ?? [],
                      album: book.title, albumArtists: book.author.map { [$0] } ?? [],
                      trackNumber: Int(file.position) + 1, genre: file.genre,
                      duration: file.duration.map { .microseconds($0) }, artURL: cover,
                      chapters: (file.id.flatMap { chapters[$0] } ?? []).map { ChapterMark(title: $0.title, start: .microseconds($0.start)) },
                      libraryFileID: file.id, lyrics: lyrics, series: book.series, seriesPart: book.seriesPart)
        }
        files = Dictionary(uniqueKeysWithValues: available.compactMap { file in file.id.map { ($0, file) } })
        self.book = book
        recorder.lastSettings = nil
        recorder.savedShuffleOrder = shuffled
        let shuffleOrder = shuffled.compactMap { id in available.firstIndex { $0.id == id } }
        let settings = BookPlayback.settings(book)
        // Not listened to since it was last playing: the smart rewind on Play counts that pause.
        let pausedFor = book.lastPlayedAt.map { Duration.seconds(max(0, Date().timeIntervalSince($0))) } ?? .zero
        if waiting {
            logger.notice("the book's files are not where the library has them: it plays once an import finds them",
                          metadata: ["book": "\(bookId)"])
        }
        playWhenFound = waiting
        await player.open(items, startAt: startIndex, position: .microseconds(offset), play: !paused, settings: settings,
                          name: .book(bookId), shuffleOrder: shuffleOrder, pausedFor: pausedFor)
        // Kept in memory by the library when they can't be written (a read-only or full disk): playing goes on.
        try? library.setCurrentBook(bookId)
        try? library.markPlayed(bookId)
        if let movedFrom {
            recorder.undo.push(on: bookId, placeBook: bookId, file: movedFrom.file, offset: movedFrom.offset, kind: .jump)
        }
        if let left, let leftBook = left.book.id, let file = left.file.id {
            recorder.undo.push(on: bookId, placeBook: leftBook, file: file, offset: left.offset, kind: .book)
        }
        announce(.currentBook(book))
    }

    // MARK: - Undo

    /// Returns to the newest place on the current book's undo stack, and takes it off: a place in this book (playing
    /// or paused as now), or the book left for this one, at the place it was left. An undo is not itself undone: a
    /// second undo goes further back.
    /// While a stream plays, the book set aside for it is the current one: an undo returns to the place it was left
    /// at (``playStreams(_:)``).
    public func undo() async throws -> UndoEntry {
        guard let current = book ?? setAside else { throw LibraryError.notFound("no book is current: there is nothing to undo") }
        let entry = try recorder.undo.pop(current)
        if entry.placeBookId == current.id, book != nil {
            try await jump(toFile: entry.fileId, offset: entry.offset, as: nil)
        } else {
            try library.savePosition(of: entry.placeBookId, file: entry.fileId, offset: entry.offset)
            try await activate(entry.placeBookId, play: player.view.state.status == .playing, undoable: false)
        }
        return entry
    }

    /// The words of each file: the LRC file beside it, else the text its tags gave the library. On a thread for
    /// file-system work, never on the actor's thread nor the cooperative pool.
    private static func words(of files: [(path: String, tags: String?)], logger: Logger) async -> [Lyrics?] {
        await ThreadPool.fileSystem.run {
            files.map { path, tags in
                LyricsFile.lyrics(beside: URL(fileURLWithPath: path), logger: logger)
                    ?? LyricsFile.lyrics(in: tags.map(TagLyrics.text), of: path, logger: logger)
            }
        }
    }

    /// An import wrote `books`: when the current book is among them and a file of its queue is now at another path
    /// (renamed, moved), or a file it left out is back, the book is opened again at its place, playing or paused as it
    /// was (playing when it was activated to play and waited for its files), so that the queue plays the files where
    /// they are. The queue keeps the paths it was opened with otherwise, and the files after the place would fail as
    /// missing. An activation underway opens the files where they are: it is left to do so.
    public func booksImported(_ books: [Int64]) async {
        guard !closed, activationsUnderway == 0, let id = book?.id, books.contains(id), let now = try? library.files(of: id) else { return }
        let changed = now.contains { file in
            guard let fileId = file.id, file.available else { return false }
            // Not in the queue: back, if it can be played now (one that still can't stays left out).
            guard let queued = files[fileId] else { return MediaOpener.isPlayableFile(URL(fileURLWithPath: file.path)) }
            return queued.path != file.path
        }
        guard changed else { return }
        let play = player.view.state.status == .playing || playWhenFound
        logger.info("the current book's files moved: opening it again", metadata: ["book": "\(id)"])
        do {
            try await activate(id, play: play)
        } catch {
            logger.warning("could not open the current book again", metadata: ["book": "\(id)", "error": "\(error)"])
        }
    }

    /// Whether the folder of `book` is there, on its mount.
    private static func isReachable(_ book: Book) -> Bool {
        guard let folder = book.sourcePath, FileManager.default.fileExists(atPath: folder) else { return false }
        return book.mountPath.map { Mounts.current().isMounted($0) } ?? true
    }

    /// The series of `id` was set by hand: when it is the current book, its queue says so at once.
    public func seriesChanged(of id: Int64) async {
        guard book?.id == id, let changed = try? library.book(id) else { return }
        book?.series = changed.series
        book?.seriesPart = changed.seriesPart
        await player.setSeries(changed.series, part: changed.seriesPart)
    }

    /// Applies new settings of the current book to the player.
    func apply(_ settings: BookSettings) async throws {
        guard var book else { return }
        book.settings = settings
        self.book = book
        try await player.apply(BookPlayback.settings(book))
    }

    /// The loudness of `id` was measured (or could not be): when it is the current book, its gain follows.
    public func loudnessMeasured(_ id: Int64) async {
        guard var book, book.id == id, let measured = try? library.book(id) else { return }
        book.loudness = measured.loudness
        book.loudnessProblem = measured.loudnessProblem
        self.book = book
        await player.setLoudnessGain(book.loudnessGain(target: BookPlayback.loudnessTarget))
    }

    /// The loudness target changed (a reload): the current book's gain and compressor follow at once.
    public func loudnessTargetChanged() async {
        guard let book, let id = book.id else { return }
        await player.setLoudnessGain(book.loudnessGain(target: BookPlayback.loudnessTarget))
        await player.setCompressor(BookPlayback.compressor(book))
        announce(.bookChanged(id))
    }

    /// Re-activates the book that was current when the daemon last ran, paused at its saved position.
    public func restore() async {
        do {
            guard let id = try library.currentBook() else { return }
            try await activate(id, play: false)
            logger.info("resumed the current book", metadata: ["book": "\(id)"])
        } catch {
            logger.warning("could not resume the last book", metadata: ["error": "\(error)"])
        }
    }

    /// Play with nothing loaded (no current book when the daemon started): the book played last plays, where it was
    /// left, as a media key or a lock screen's button after a restart means. False when no book was ever played.
    public func resumeLastPlayed() async throws -> Bool {
        guard let id = try library.lastPlayedBook() else { return false }
        try await activate(id, play: true)
        logger.info("Play with nothing loaded: playing the book played last", metadata: ["book": "\(id)"])
        return true
    }

    /// Saves the position for the last time: the daemon is stopping. No position is saved after it.
    public func close() {
        recorder.savePosition(book: book, files: files)
        recorder.recordHeardSoFar(book: book)
        recorder.closed = true
    }

    /// Plays `streams` (http or https items: ``MediaOpener/streamItem(_:)``) as a transient queue: not a book of the
    /// library. The current book is paused at its place first, and that place is an undo step (kind `book`: the book
    /// left); the book stays current in the library (a restart resumes it), and activating it again (Play of its
    /// playlist, `lectern play`) or an undo returns to it. The streams play with the book's settings left behind: at
    /// the volume up to 1 (a renderer's 100 %), at speed 1, without the book's gain, compressor or skips.
    /// Playing or stopped (MPRIS: "if the playback is stopped, starts playing"), the stream plays; paused, it is
    /// loaded paused, as a renderer's SetAVTransportURI leaves it for the control point's Play.
    public func playStreams(_ streams: [MediaItem]) async {
        guard !streams.isEmpty else { return }
        activations += 1  // an activation still reading its files gives way
        recorder.savePosition(book: book, files: files)
        recorder.recordHeardSoFar(book: book)
        if let place = currentPlace(), let id = place.book.id, let file = place.file.id {
            recorder.undo.push(on: id, placeBook: id, file: file, offset: place.offset, kind: .book)
        }
        if let book {
            logger.info("a stream plays: the book is paused at its place", metadata: ["book": "\(book.id ?? 0)"])
            setAside = book
        }
        book = nil
        files = [:]
        playWhenFound = false
        let state = player.view.state
        await player.open(streams, play: state.status != .paused, settings: PlaybackSettings(volume: min(state.volume, 1)))
    }

    /// Forgets the current book (e.g. a client opened files that are not a book).
    public func detach() {
        setAside = nil
        recorder.savePosition(book: book, files: files)
        guard book != nil else { return }
        book = nil
        files = [:]
        playWhenFound = false
        try? library.setCurrentBook(nil)
        announce(.currentBook(nil))
    }

    /// The current book and where it is: for bookmarks.
    func currentPlace() -> (book: Book, file: BookFile, offset: Int64)? {
        guard let book, let file = player.view.state.current?.libraryFileID.flatMap({ files[$0] }) else { return nil }
        return (book, file, player.view.position().microseconds)
    }

    /// Moves to a place in the current book (a file of it and an offset); `kind`: what the move is to undo (nil: an
    /// undo itself).
    public func jump(toFile fileId: Int64, offset: Int64, as kind: MoveKind? = .jump) async throws {
        guard files[fileId] != nil, let index = player.view.state.queue.firstIndex(where: { $0.libraryFileID == fileId }) else {
            throw LibraryError.notFound("that file is not available in the current book")
        }
        do {
            try await player.jump(toFile: index, at: .microseconds(offset), as: kind)
        } catch {
            throw LibraryError.invalidArgument("\(error)")
        }
    }

    /// A bookmark the daemon makes by itself where the listener is (the output went away).
    public func addAutomaticBookmark(_ kind: Bookmark.Kind, title: String) {
        recorder.addAutomaticBookmark(kind, title: title, book: book, files: files)
    }
}
