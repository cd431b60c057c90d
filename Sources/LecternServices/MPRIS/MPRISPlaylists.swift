import DBus
import Foundation
import LecternBooks
import LecternLibrary

/// MPRIS `org.mpris.MediaPlayer2.Playlists`: the library's books are the playlists. ActivatePlaylist
/// resumes a book where it was left; ActivePlaylist is the current book.
public enum MPRISPlaylists {
    public static let name = "org.mpris.MediaPlayer2.Playlists"
    static let pathPrefix = "/org/lectern/Lectern1/playlist/"
    static let playlistType = DBusType.structure([.objectPath, .string, .string])

    /// The interface; `session` (with the library) is set once the library is open.
    public static func interface(session: Eventually<BookSession>) -> Interface {
        Interface(name,
            methods: [
                LibraryService.activating("ActivatePlaylist", in: [("PlaylistId", .objectPath)]) { call in
                    let path: ObjectPath = try call.argument(0)
                    guard let id = bookID(path) else {
                        throw BusError.invalidArgs("\(path) is not one of Lectern's playlists")
                    }
                    return try await session.value.activation(of: id, play: true)
                },
                Method("GetPlaylists", in: [("Index", .uint32), ("MaxCount", .uint32), ("Order", .string), ("ReverseOrder", .boolean)],
                       out: [("Playlists", .array(playlistType))]) { call in
                    let (index, maxCount, orderName, reversed) = try call.arguments(UInt32.self, UInt32.self, String.self, Bool.self)
                    guard let ordering = BookSort.mprisOrderings.first(where: { $0.name == orderName }) else {
                        throw BusError.invalidArgs("Order must be one of \(BookSort.mprisOrderings.map(\.name).joined(separator: ", "))")
                    }
                    let library = await session.value.library
                    let books: [Book]
                    do {
                        books = try await library.reading {
                            try $0.books(sortedBy: ordering.sort, reversed: reversed != ordering.reversed, offset: Int(index), limit: Int(maxCount))
                        }
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
            "Orderings": .strings(BookSort.mprisOrderings.map(\.name)),
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
