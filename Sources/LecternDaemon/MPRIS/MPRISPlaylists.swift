import DBus
import Foundation
import LecternLibrary

/// MPRIS `org.mpris.MediaPlayer2.Playlists`: the library's books are the playlists. ActivatePlaylist
/// resumes a book where it was left; ActivePlaylist is the current book.
enum MPRISPlaylists {
    static let name = "org.mpris.MediaPlayer2.Playlists"
    static let pathPrefix = "/org/lectern/Lectern1/playlist/"
    static let playlistType = DBusType.structure([.objectPath, .string, .string])

    /// The interface; `session` (with the library) is set once the library is open.
    static func interface(session: Eventually<BookSession>) -> Interface {
        Interface(name,
            methods: [
                Method("ActivatePlaylist", in: [("PlaylistId", .objectPath)]) { call in
                    guard let path = call.arguments[0].objectPath, let id = bookID(path) else {
                        throw BusError.invalidArgs("\(call.arguments[0]) is not one of Lectern's playlists")
                    }
                    do {
                        try await session.value.activate(id, play: true)
                    } catch let error as LibraryError {
                        throw LibraryService.busError(error)
                    }
                    return []
                },
                Method("GetPlaylists", in: [("Index", .uint32), ("MaxCount", .uint32), ("Order", .string), ("ReverseOrder", .boolean)],
                       out: [("Playlists", .array(playlistType))]) { call in
                    guard let order = BookOrder(mprisOrdering: call.arguments[2].string ?? "") else {
                        throw BusError.invalidArgs("Order must be one of \(BookOrder.allCases.map(\.mprisOrdering).joined(separator: ", "))")
                    }
                    let library = await session.value.library
                    let books: [Book]
                    do {
                        books = try library.books(ordered: order, reversed: call.arguments[3].bool ?? false,
                                                  offset: Int(call.arguments[0].int64 ?? 0), limit: Int(call.arguments[1].int64 ?? 0))
                    } catch let error as LibraryError {
                        throw LibraryService.busError(error)
                    }
                    return [.array(playlistType, books.map(playlist))]
                },
            ],
            properties: [
                Property("PlaylistCount", .uint32),
                Property("Orderings", .array(.string), changes: .const),
                Property("ActivePlaylist", .structure([.boolean, playlistType])),
            ],
            signals: [SignalDecl("PlaylistChanged", [("Playlist", playlistType)])])
    }

    static func properties(current: Book?) -> [String: DBusValue] {
        [
            "Orderings": .strings(BookOrder.allCases.map(\.mprisOrdering)),
            "ActivePlaylist": .structure([.boolean(current != nil),
                                          current.map(playlist) ?? .structure([.objectPath(.root), .string(""), .string("")])]),
        ]
    }

    static func playlist(_ book: Book) -> DBusValue {
        let path = ObjectPath(pathPrefix + String(book.id ?? 0)) ?? .root
        let icon = book.coverPath.map { URL(fileURLWithPath: $0).absoluteString } ?? ""
        return .structure([.objectPath(path), .string(book.title), .string(icon)])
    }

    static func bookID(_ path: ObjectPath) -> Int64? {
        guard path.rawValue.hasPrefix(pathPrefix) else { return nil }
        return Int64(path.rawValue.dropFirst(pathPrefix.count))
    }
}
