import LecternCore

extension PlaybackStatus {
    /// org.lectern.Player1's spelling, GetStatus's `status`: "Playing", "Paused" or "Stopped" (what `lectern status`
    /// prints). The same words as MPRIS's, each interface keeping its own.
    var player1Status: String {
        switch self {
        case .playing: "Playing"
        case .paused: "Paused"
        case .stopped: "Stopped"
        }
    }
}
