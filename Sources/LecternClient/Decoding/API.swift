/// What the client reads of each of lecternd's interfaces.
public enum API {
    public static let mpris = MPRISPlayer()
    public static let player = Player1()
    public static let library = Library1()
    public static let bookmarks = Bookmarks1()
    public static let history = History1()
    public static let configuration = Configuration1()
    public static let prompts = Prompts1()
    public static let cast = Cast1()

    /// Every decoding of the client, found in the interfaces' lists above (a decoding added to one is found with
    /// the others): the test holds each against the API's documentation.
    public static var decodings: [any RecordedDecoding] {
        let lists: [Any] = [mpris, player, library, bookmarks, history, configuration, prompts, cast]
        return lists.flatMap { Mirror(reflecting: $0).children.compactMap { $0.value as? any RecordedDecoding } }
    }
}
