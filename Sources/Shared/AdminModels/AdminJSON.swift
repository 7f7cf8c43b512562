import Foundation

/// The coders for the API's bodies, the same on both ends.
///
/// Keys are spelled out in each type's `CodingKeys` instead of relying on
/// `convertToSnakeCase`, so renaming a Swift property can never silently rename a JSON key,
/// and label dictionaries (user data) are never touched by a key strategy.
public enum AdminJSON {
    /// Sorted keys make bodies byte-stable, which helps diffing and caching.
    public static func encoder(prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(AdminDates.format(date))
        }
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = AdminDates.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not an ISO-8601 date-time such as 2024-05-01T10:00:00.250Z")
            }
            return date
        }
        return decoder
    }
}
