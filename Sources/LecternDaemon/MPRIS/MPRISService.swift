import DBus
import Foundation
import LecternCore
import LecternLibrary
import Synchronization

/// The MPRIS 2.2 face of the player on `/org/mpris/MediaPlayer2`: the root and Player interfaces
/// declared as data, their handlers calling the ``Player`` actor, and its events mapped onto
/// properties (batched PropertiesChanged) and `Seeked`.
///
/// The rules it keeps are in ../shared/docs/mpris-rules.md; the tests in IntegrationTests check them.
public final class MPRISService: Sendable {
    public static let path = ObjectPath("/org/mpris/MediaPlayer2")!
    public static let rootInterface = "org.mpris.MediaPlayer2"
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// Track ids live under Lectern's own tree: never /org/mpris, never NoTrack.
    static let trackPathPrefix = "/org/lectern/Lectern1/track/"

    let object = Mutex<ExportedObject?>(nil)

    public init() {}

    /// The current book changed: it is the active playlist.
    func currentBookChanged(_ book: Book?) {
        object.withLock { $0 }?.update(MPRISPlaylists.name, MPRISPlaylists.properties(current: book))
    }

    /// The number of books (= playlists) changed.
    func bookCountChanged(_ count: Int) {
        object.withLock { $0 }?.update(MPRISPlaylists.name, ["PlaylistCount": .uint32(UInt32(clamping: count))])
    }

    /// Feed the player's events here (the player's observer).
    public func handle(_ event: PlayerEvent) {
        guard let object = object.withLock({ $0 }) else { return }
        switch event {
        case .stateChanged(let state):
            object.update(Self.playerInterface, Self.playerProperties(state))
        case .seeked(let position):
            try? object.emit(Self.playerInterface, "Seeked", [.int64(position.microseconds)])
        case .stopped:
            break
        }
    }

    /// Exports the object on `connection` with the player's current state as the initial property values.
    func export(on connection: BusConnection, player: Player, opener: MediaOpener, library: Library,
                session: BookSession, quit: @escaping @Sendable () -> Void) async throws {
        let interfaces = [Self.root(quit: quit, schemes: opener.supportedSchemes, mimeTypes: opener.supportedMimeTypes),
                          Self.player(player, opener: opener, session: session),
                          MPRISPlaylists.interface(library: library, session: session)]
        let exported = try connection.export(Self.path, interfaces: interfaces)
        exported.update(Self.rootInterface, [
            "CanQuit": .boolean(true), "CanRaise": .boolean(false), "HasTrackList": .boolean(false),
            "Identity": .string("Lectern"), "DesktopEntry": .string("lectern"),
            "SupportedUriSchemes": .strings(opener.supportedSchemes),
            "SupportedMimeTypes": .strings(opener.supportedMimeTypes),
        ])
        exported.update(Self.playerInterface, Self.playerProperties(await player.snapshot))
        var playlists = MPRISPlaylists.properties(current: nil)
        playlists["PlaylistCount"] = .uint32(UInt32(clamping: (try? library.bookCount()) ?? 0))
        exported.update(MPRISPlaylists.name, playlists)
        object.withLock { $0 = exported }
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

    static func player(_ player: Player, opener: MediaOpener, session: BookSession) -> Interface {
        Interface(playerInterface,
            methods: [
                Method("Next") { _ in await player.next(); return [] },
                Method("Previous") { _ in await player.previous(); return [] },
                Method("Pause") { _ in await player.pause(); return [] },
                Method("PlayPause") { _ in
                    do { try await player.playPause() } catch { throw BusError.failed("Cannot play or pause: \(error)") }
                    return []
                },
                Method("Stop") { _ in await player.stop(); return [] },
                Method("Play") { _ in await player.play(); return [] },
                Method("Seek", in: [("Offset", .int64)]) { call in
                    await player.seek(by: .microseconds(call.arguments[0].int64 ?? 0))
                    return []
                },
                Method("SetPosition", in: [("TrackId", .objectPath), ("Position", .int64)]) { call in
                    guard let path = call.arguments[0].objectPath, let id = trackID(path),
                          let position = call.arguments[1].int64 else { return [] }  // the spec says: ignore
                    await player.setPosition(itemID: id, to: .microseconds(position))
                    return []
                },
                Method("OpenUri", in: [("Uri", .string)]) { call in
                    let items = try await opener.open(call.arguments[0].string ?? "")
                    await session.detach()  // files opened by URI are not a book of the library
                    await player.open(items)
                    opener.discoverRemaining(items.dropFirst(), into: player)
                    return []
                },
            ],
            properties: [
                Property("PlaybackStatus", .string),
                Property("LoopStatus", .string, access: .readwrite, set: { value in
                    guard let text = value.string, let mode = LoopMode(rawValue: text) else {
                        throw BusError.invalidArgs("LoopStatus must be None, Track or Playlist, not \(value)")
                    }
                    await player.setLoop(mode)
                }),
                Property("Rate", .double, access: .readwrite, set: { value in
                    do { try await player.setRate(value.double ?? .nan) } catch { throw BusError.invalidArgs("Rate: \(error)") }
                }),
                Property("Shuffle", .boolean, access: .readwrite, set: { value in await player.setShuffle(value.bool ?? false) }),
                Property("Metadata", .dictionary(key: .string, value: .variant)),
                Property("Volume", .double, access: .readwrite, set: { value in
                    do { try await player.setVolume(value.double ?? .nan) } catch { throw BusError.invalidArgs("Volume: \(error)") }
                }),
                Property("Position", .int64, changes: .none, get: { [clock = player.positionClock] in
                    .int64(clock.position().microseconds)
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

    // MARK: - Mapping

    static func playerProperties(_ state: PlayerState) -> [String: DBusValue] {
        let hasTrack = state.current != nil
        return [
            "PlaybackStatus": .string(state.status.rawValue),
            "LoopStatus": .string(state.loop.rawValue),
            "Rate": .double(state.rate),
            "Shuffle": .boolean(state.shuffle),
            "Metadata": metadata(state.current),
            "Volume": .double(state.volume),
            "MinimumRate": .double(PlayerState.minimumRate),
            "MaximumRate": .double(PlayerState.maximumRate),
            "CanGoNext": .boolean(state.canGoNext),
            "CanGoPrevious": .boolean(state.canGoPrevious),
            "CanPlay": .boolean(hasTrack),
            "CanPause": .boolean(hasTrack),
            "CanSeek": .boolean(hasTrack),
            "CanControl": .boolean(true),
        ]
    }

    static func metadata(_ item: MediaItem?) -> DBusValue {
        guard let item, let trackID = ObjectPath(trackPathPrefix + String(item.id)) else { return .emptyVardict }
        var map: [String: DBusValue] = [
            "mpris:trackid": .objectPath(trackID),
            "xesam:title": .string(item.displayTitle),
            "xesam:url": .string(item.url.absoluteString),
        ]
        if let duration = item.duration { map["mpris:length"] = .int64(duration.microseconds) }
        if !item.artists.isEmpty { map["xesam:artist"] = .strings(item.artists) }
        if !item.albumArtists.isEmpty { map["xesam:albumArtist"] = .strings(item.albumArtists) }
        if let album = item.album { map["xesam:album"] = .string(album) }
        if let genre = item.genre { map["xesam:genre"] = .strings([genre]) }
        if let number = item.trackNumber { map["xesam:trackNumber"] = .int32(Int32(clamping: number)) }
        if let number = item.discNumber { map["xesam:discNumber"] = .int32(Int32(clamping: number)) }
        if let art = item.artURL { map["mpris:artUrl"] = .string(art.absoluteString) }
        return .vardict(map)
    }

    static func trackID(_ path: ObjectPath) -> Int? {
        guard path.rawValue.hasPrefix(trackPathPrefix) else { return nil }
        return Int(path.rawValue.dropFirst(trackPathPrefix.count))
    }
}
