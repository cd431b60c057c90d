import DBus
import Foundation
import LecternBooks
import LecternCore
import LecternLibrary
import LecternMedia
import Synchronization

/// The MPRIS 2.2 face of the player on `/org/mpris/MediaPlayer2`: the root and Player interfaces
/// declared as data, their handlers calling the ``Player`` actor, and its events mapped onto
/// properties (batched PropertiesChanged) and `Seeked`.
///
/// A track is a chapter (a file without chapters is one): its id is
/// `/org/lectern/Lectern1/<queue>/track/<n>`, where the queue is `book/<id>` for a book of the library
/// (stable across runs) or `queue/<n>` for files opened by URI, and n the track's index in the queue.
///
/// The rules it keeps are in docs/mpris-rules.md; the tests in IntegrationTests check them.
public final class MPRISService: PlayerObserver {
    public static let path = ObjectPath("/org/mpris/MediaPlayer2")!
    public static let rootInterface = "org.mpris.MediaPlayer2"
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    public static let trackListInterface = "org.mpris.MediaPlayer2.TrackList"
    /// Track ids live under Lectern's own tree: never /org/mpris, never NoTrack.
    static let trackPathPrefix = "/org/lectern/Lectern1/"

    /// Set once the object is exported: the player's events before are in the state it is exported with.
    public let object = Mutex<ExportedObject?>(nil)
    private let template: Mutex<TitleTemplate>
    var titleTemplate: TitleTemplate { template.withLock { $0 } }
    /// Whether the library has a book played before: Play with nothing loaded resumes it, so CanPlay is true.
    private let resumable = Mutex(false)

    public init(titleTemplate: TitleTemplate = TitleTemplate()) {
        template = Mutex(titleTemplate)
    }

    /// A new template (a reloaded configuration): the current track's Metadata is published again with it. Called
    /// on the player (``Player/withPublishedState(_:)``), in turn with its events.
    public func setTitleTemplate(_ titleTemplate: TitleTemplate, state: PlayerState) {
        guard Self.replace(template, with: titleTemplate) else { return }
        object.withLock { $0 }?.update(Self.playerInterface, playerProperties(state))
    }

    /// Puts `value` in `mutex`; whether that changed it.
    private static func replace<T: Equatable & Sendable>(_ mutex: borrowing Mutex<T>, with value: T) -> Bool {
        mutex.withLock { old in
            defer { old = value }
            return old != value
        }
    }

    /// The current book changed: it is the active playlist.
    public func currentBookChanged(_ book: Book?) {
        object.withLock { $0 }?.update(MPRISPlaylists.name, MPRISPlaylists.properties(current: book))
    }

    /// Whether the library has a book played before (``BookSession/resumeLastPlayed()``) changed, or is known: with
    /// nothing loaded, CanPlay says so. `state`: the player's, as last published.
    public func setResumable(_ value: Bool, state: PlayerState) {
        guard Self.replace(resumable, with: value) else { return }
        object.withLock { $0 }?.update(Self.playerInterface, playerProperties(state))
    }

    /// The number of books (= playlists) changed.
    public func bookCountChanged(_ count: Int) {
        object.withLock { $0 }?.update(MPRISPlaylists.name, ["PlaylistCount": .uint32(UInt32(clamping: count))])
    }

    /// The player's events, as its observer.
    public func handle(_ event: PlayerEvent) {
        guard let object = object.withLock({ $0 }) else { return }
        switch event {
        case .stateChanged(let state, let previous):
            object.update(Self.playerInterface, playerProperties(state))
            announceTrackListChanges(from: previous, to: state, on: object)
        case .seeked(let position), .silenceSkipped(let position):
            // Skip silence moved the position faster than the Rate: for clients that reckon it, a seek.
            try? object.emit(Self.playerInterface, "Seeked", [.int64(position.microseconds)])
        case .stopped, .finished, .sleepTimerFired, .itemFailed, .playing, .interruption, .moving:
            break
        }
    }

    /// TrackListReplaced (and Tracks invalidated) when the tracks are others; TrackMetadataChanged for the
    /// tracks whose metadata changed (tags or durations discovered later).
    private func announceTrackListChanges(from previous: PlayerState, to state: PlayerState, on object: ExportedObject) {
        // Ids are the queue's name and the track's index: the same name and count are the same ids.
        if state.queueID != previous.queueID || state.chapters.count != previous.chapters.count {
            let ids = trackIDs(state)
            object.update(Self.trackListInterface, ["Tracks": .objectPaths(ids)])
            let current = state.currentChapter.map { ids[$0] } ?? Self.noTrack
            try? object.emit(Self.trackListInterface, "TrackListReplaced", [.objectPaths(ids), .objectPath(current)])
            return
        }
        // Only the files whose tags or duration changed; the book-level figures are not in TrackList metadata.
        let changedFiles = Set(state.queue.indices.filter { previous.queue.indices.contains($0) && previous.queue[$0] != state.queue[$0] })
        guard !changedFiles.isEmpty else { return }
        for index in state.chapters.indices where changedFiles.contains(state.chapters[index].itemIndex) {
            let metadata = metadata(state, track: index, bookFigures: false)
            guard metadata != self.metadata(previous, track: index, bookFigures: false),
                  let id = Self.trackID(queue: state.queueID, track: index) else { continue }
            try? object.emit(Self.trackListInterface, "TrackMetadataChanged", [.objectPath(id), metadata])
        }
    }

    /// Exports the object on `connection` with the player's current state as the initial property values. The
    /// library may still be opening: `session` is set once it is open, and Playlists' properties are the owner's to
    /// publish then (``publishPlaylists(bookCount:)``), its calls held until they are.
    /// `keys` hears of the transport calls (the media keys'), before and after each: spoken prompts say the state
    /// they left.
    /// `books` opens what OpenUri is given, once the library is open.
    public func export(on connection: BusConnection, player: Player, opener: MediaOpener, books: Eventually<BookOpener>,
                session: Eventually<BookSession>, keys: PromptFeed, quit: @escaping @Sendable () -> Void) async throws {
        let interfaces = [Self.root(quit: quit, schemes: opener.supportedSchemes, mimeTypes: opener.supportedMimeTypes),
                          makePlayer(player, books: books, session: session, keys: keys),
                          makeTrackList(player),
                          MPRISPlaylists.interface(session: session)]
        let exported = try connection.export(Self.path, interfaces: interfaces)
        exported.update(Self.rootInterface, [
            "CanQuit": .boolean(true), "CanRaise": .boolean(false), "HasTrackList": .boolean(true),
            "Identity": .string("Lectern"), "DesktopEntry": .string(ApplicationService.id),
            "SupportedUriSchemes": .strings(opener.supportedSchemes),
            "SupportedMimeTypes": .strings(opener.supportedMimeTypes),
        ])
        let state = player.view.state
        exported.update(Self.playerInterface, playerProperties(state))
        exported.update(Self.trackListInterface, ["Tracks": .objectPaths(trackIDs(state)), "CanEditTracks": .boolean(false)])
        object.withLock { $0 = exported }
    }

    /// Playlists' first values, once the library is open (the current book comes with the session's restore).
    public func publishPlaylists(bookCount: Int) {
        var playlists = MPRISPlaylists.properties(current: nil)
        playlists["PlaylistCount"] = .uint32(UInt32(clamping: bookCount))
        object.withLock { $0 }?.update(MPRISPlaylists.name, playlists)
    }

    // MARK: - Declarations

    static func root(quit: @escaping @Sendable () -> Void, schemes: [String], mimeTypes: [String]) -> Interface {
        Interface(rootInterface,
            methods: [
                Method("Raise") { _ in [] },
                Method("Quit") { _ in quit(); return [] },
            ],
            properties: [
                Property("CanQuit", .boolean),
                Property("CanRaise", .boolean),
                Property("HasTrackList", .boolean),
                Property("Identity", .string),
                Property("DesktopEntry", .string),
                Property("SupportedUriSchemes", .array(.string)),
                Property("SupportedMimeTypes", .array(.string)),
            ])
    }

    func makePlayer(_ player: Player, books: Eventually<BookOpener>, session: Eventually<BookSession>, keys: PromptFeed) -> Interface {
        /// A media key's command, the prompts told before and after it.
        @Sendable func key(_ command: () async throws -> Void) async throws -> [DBusValue] {
            keys.keyPressed()
            defer { keys.keyHandled(player.view.state) }
            try await command()
            return []
        }
        /// With nothing loaded, Play resumes the book played last; false when something is loaded (or none was played).
        @Sendable func resumeWithNothingLoaded() async throws -> Bool {
            guard player.view.state.current == nil else { return false }
            do {
                return try await session.value.resumeLastPlayed()
            } catch {
                throw BusError.failed("Cannot play the book played last: \(error)")
            }
        }
        return Interface(Self.playerInterface,
            methods: [
                Method("Next") { _ in try await key { await player.next() } },
                Method("Previous") { _ in try await key { await player.previous() } },
                Method("Pause") { _ in try await key { await player.pause() } },
                Method("PlayPause") { _ in
                    try await key {
                        guard try await !resumeWithNothingLoaded() else { return }
                        do { try await player.playPause() } catch { throw BusError.failed("Cannot play or pause: \(error)") }
                    }
                },
                Method("Stop") { _ in try await key { await player.stop() } },
                Method("Play") { _ in
                    try await key { if try await !resumeWithNothingLoaded() { await player.play() } }
                },
                Method("Seek", in: [("Offset", .int64)]) { call in
                    await player.seek(by: .microseconds(try call.argument(0, as: Int64.self)))
                    return []
                },
                Method("SetPosition", in: [("TrackId", .objectPath), ("Position", .int64)]) { call in
                    let (path, position) = try call.arguments(ObjectPath.self, Int64.self)
                    guard let (queue, track) = Self.track(path) else { return [] }  // the spec says: ignore
                    await player.setPosition(queue: queue, chapter: track, to: .microseconds(position))
                    return []
                },
                Method("OpenUri", in: [("Uri", .string)]) { call in
                    try await books.value.openForClient([call.argument(0, as: String.self)])
                    return []
                },
            ],
            properties: [
                Property("PlaybackStatus", .string),
                Property("LoopStatus", .string, access: .readwrite, set: { value in
                    guard let mode = LoopMode(mprisLoopStatus: try value.decoded(as: String.self)) else {
                        throw BusError.invalidArgs("LoopStatus must be None, Track or Playlist, not \(value)")
                    }
                    await player.setLoop(mode)
                }),
                Property("Rate", .double, access: .readwrite, set: { value in
                    let rate: Double = try value.decoded()
                    do { try await player.setRate(rate) } catch { throw BusError.invalidArgs("Rate: \(error)") }
                }),
                Property("Shuffle", .boolean, access: .readwrite, set: { value in await player.setShuffle(try value.decoded()) }),
                Property("Metadata", .dictionary(key: .string, value: .variant)),
                Property("Volume", .double, access: .readwrite, set: { value in
                    let volume: Double = try value.decoded()
                    do { try await player.setVolume(volume) } catch { throw BusError.invalidArgs("Volume: \(error)") }
                }),
                Property("Position", .int64, changes: .none, get: { [view = player.view] in
                    // Within the current track: the file's position less the track's start.
                    let state = view.state
                    let position = view.position()
                    guard let track = state.chapter else { return .int64(position.microseconds) }
                    var within = max(.zero, position - track.start)
                    if let length = track.length { within = min(within, length) }
                    return .int64(within.microseconds)
                }),
                Property("MinimumRate", .double),
                Property("MaximumRate", .double),
                Property("CanGoNext", .boolean),
                Property("CanGoPrevious", .boolean),
                Property("CanPlay", .boolean),
                Property("CanPause", .boolean),
                Property("CanSeek", .boolean),
                Property("CanControl", .boolean, changes: .const),
            ],
            signals: [SignalDecl("Seeked", [("Position", .int64)])])
    }

    /// TrackList: the queue's tracks (chapters), read-only; GoTo jumps to one.
    func makeTrackList(_ player: Player) -> Interface {
        Interface(Self.trackListInterface,
            methods: [
                Method("GetTracksMetadata", in: [("TrackIds", .array(.objectPath))],
                       out: [("Metadata", .array(.dictionary(key: .string, value: .variant)))]) { [self, view = player.view] call in
                    let state = view.state
                    let ids = trackIDs(state)
                    let maps = try call.argument(0, as: [ObjectPath].self).compactMap { path -> DBusValue? in
                        guard let index = ids.firstIndex(of: path) else { return nil }
                        return metadata(state, track: index, bookFigures: false)
                    }
                    return [.array(.dictionary(key: .string, value: .variant), maps)]
                },
                Method("AddTrack", in: [("Uri", .string), ("AfterTrack", .objectPath), ("SetAsCurrent", .boolean)]) { _ in
                    throw BusError.notSupported("The track list is the book's chapters: CanEditTracks is false")
                },
                Method("RemoveTrack", in: [("TrackId", .objectPath)]) { _ in
                    throw BusError.notSupported("The track list is the book's chapters: CanEditTracks is false")
                },
                Method("GoTo", in: [("TrackId", .objectPath)]) { [view = player.view] call in
                    // An id that is not in the list is ignored, as the spec says.
                    guard let (queue, track) = Self.track(try call.argument(0)), queue == view.state.queueID else { return [] }
                    try? await player.goTo(chapter: track)
                    return []
                },
            ],
            properties: [
                Property("Tracks", .array(.objectPath), changes: .invalidates),
                Property("CanEditTracks", .boolean),
            ],
            signals: [
                SignalDecl("TrackListReplaced", [("Tracks", .array(.objectPath)), ("CurrentTrack", .objectPath)]),
                SignalDecl("TrackAdded", [("Metadata", .dictionary(key: .string, value: .variant)), ("AfterTrack", .objectPath)]),
                SignalDecl("TrackRemoved", [("TrackId", .objectPath)]),
                SignalDecl("TrackMetadataChanged", [("TrackId", .objectPath), ("Metadata", .dictionary(key: .string, value: .variant))]),
            ])
    }

    // MARK: - Mapping

    static let noTrack = ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!

    func playerProperties(_ state: PlayerState) -> [String: DBusValue] {
        let hasTrack = state.current != nil
        return [
            "PlaybackStatus": .string(state.status.mprisPlaybackStatus),
            "LoopStatus": .string(state.loop.mprisLoopStatus),
            "Rate": .double(state.rate),
            "Shuffle": .boolean(state.shuffle),
            "Metadata": state.currentChapter.map { metadata(state, track: $0) } ?? .emptyVardict,
            "Volume": .double(state.volume),
            "MinimumRate": .double(PlayerState.minimumRate),
            "MaximumRate": .double(PlayerState.maximumRate),
            "CanGoNext": .boolean(state.canGoNext),
            "CanGoPrevious": .boolean(state.canGoPrevious),
            "CanPlay": .boolean(hasTrack || resumable.withLock { $0 }),
            "CanPause": .boolean(hasTrack),
            "CanSeek": .boolean(hasTrack && state.canSeek),
            "CanControl": .boolean(true),
        ]
    }

    func trackIDs(_ state: PlayerState) -> [ObjectPath] {
        state.chapters.indices.compactMap { Self.trackID(queue: state.queueID, track: $0) }
    }

    /// A track's id: `/org/lectern/Lectern1/book/12/track/3` for chapter 3 of book 12's queue,
    /// `/org/lectern/Lectern1/queue/2/track/0` for files opened by URI. Nil without a queue.
    static func trackID(queue: QueueID?, track: Int) -> ObjectPath? {
        guard let queue else { return nil }
        let name = switch queue {
        case .book(let id): "book/" + String(id)
        case .opened(let number): "queue/" + String(number)
        }
        return ObjectPath(trackPathPrefix + name + "/track/" + String(track))
    }

    /// The queue and track index of a track id; nil for anything else.
    static func track(_ path: ObjectPath) -> (queue: QueueID, track: Int)? {
        let parts = path.rawValue.dropFirst(trackPathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard path.rawValue.hasPrefix(trackPathPrefix), parts.count == 4, parts[2] == "track",
              let track = Int(parts[3]), track >= 0 else { return nil }
        switch parts[0] {
        case "book": return Int64(parts[1]).map { (.book($0), track) }
        case "queue": return Int(parts[1]).map { (.opened($0), track) }
        default: return nil
        }
    }

    /// A track's metadata: the chapter titled by the template, the book as album, the author as artist,
    /// the chapter's length, and (`bookFigures`, for the current track's Metadata) the book-level figures as
    /// lectern:* keys, at the track's start: add Position for "now".
    func metadata(_ state: PlayerState, track index: Int, bookFigures: Bool = true) -> DBusValue {
        guard state.chapters.indices.contains(index), let trackID = Self.trackID(queue: state.queueID, track: index) else {
            return .emptyVardict
        }
        let track = state.chapters[index]
        let item = state.queue[track.itemIndex]
        let title = titleTemplate.render(chapter: track.title, book: item.album ?? item.displayTitle,
                                         author: (item.albumArtists.first ?? item.artists.first) ?? "",
                                         file: item.displayTitle, number: index + 1, count: state.chapters.count)
        var map: [String: DBusValue] = [
            "mpris:trackid": .objectPath(trackID),
            "xesam:title": .string(title),
            "xesam:url": .string(item.url.absoluteString),
            "xesam:trackNumber": .int32(Int32(clamping: index + 1)),
            "lectern:fileIndex": .int32(Int32(clamping: track.itemIndex)),
            "lectern:chapterIndex": .int32(Int32(clamping: index)),
        ]
        if bookFigures {
            let progress = state.progress(ofChapter: index)
            map["lectern:bookPosition"] = .int64(progress.bookPosition.microseconds)
            map["lectern:bookLength"] = .int64(progress.bookLength.microseconds)
            map["lectern:remaining"] = .int64(progress.remaining.microseconds)
            map["lectern:fileCount"] = .int32(Int32(clamping: state.queue.count))
            map["lectern:chapterCount"] = .int32(Int32(clamping: state.chapters.count))
            // The chapter's words (docs/decisions/lyrics.md), made once with the chapters: the same string each time,
            // comparing it is cheap. Only here: in TrackList metadata, a book's transcripts would make each reply
            // megabytes long.
            if let text = track.text, !text.isEmpty { map["xesam:asText"] = .string(text) }
        }
        if let length = track.length { map["mpris:length"] = .int64(length.microseconds) }
        if !item.artists.isEmpty { map["xesam:artist"] = .strings(item.artists) }
        if !item.albumArtists.isEmpty { map["xesam:albumArtist"] = .strings(item.albumArtists) }
        if let album = item.album { map["xesam:album"] = .string(album) }
        if let series = item.series { map["lectern:series"] = .string(series) }
        if let part = item.seriesPart { map["lectern:seriesPart"] = .string(part) }
        if let genre = item.genre { map["xesam:genre"] = .strings([genre]) }
        if let number = item.discNumber { map["xesam:discNumber"] = .int32(Int32(clamping: number)) }
        if let art = item.artURL { map["mpris:artUrl"] = .string(art.absoluteString) }
        return .vardict(map)
    }
}
