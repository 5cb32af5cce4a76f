//! What a column's values look like: the value patterns of HIPAA Safe Harbor's identifier
//! kinds (e-mail, phone, SSN, URL, IP, vehicle and device numbers) and of quasi-identifiers
//! (ZIP codes, dates written as text). Each matcher reads one value's text.

/// A pattern a column's values can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValuePattern {
    /// `user@host.tld`.
    Email,
    /// `123-45-6789`.
    Ssn,
    /// `http://…`, `https://…`, `www.…`.
    Url,
    /// IPv4 `10.0.0.1` or IPv6 `fe80::1`.
    IpAddress,
    /// `00:1a:2b:3c:4d:5e`.
    MacAddress,
    /// A 17-character vehicle identification number.
    Vin,
    /// A date or date-time written as text (`2019-03-14`, `14/03/2019`).
    Date,
    /// A phone or fax number: 7 to 15 digits with separators.
    Phone,
    /// A US ZIP code, `02139` or `02139-4307`.
    Zip,
}

impl ValuePattern {
    /// The patterns in the order they are tried (a date before a phone number, an SSN
    /// before both).
    pub const ALL: [ValuePattern; 9] = [
        ValuePattern::Email,
        ValuePattern::Url,
        ValuePattern::Ssn,
        ValuePattern::MacAddress,
        ValuePattern::IpAddress,
        ValuePattern::Date,
        ValuePattern::Vin,
        ValuePattern::Phone,
        ValuePattern::Zip,
    ];

    /// Whether `value` follows this pattern.
    pub fn matches(self, value: &str) -> bool {
        let v = value.trim();
        match self {
            ValuePattern::Email => email(v),
            ValuePattern::Ssn => ssn(v),
            ValuePattern::Url => url(v),
            ValuePattern::IpAddress => ipv4(v) || ipv6(v),
            ValuePattern::MacAddress => mac(v),
            ValuePattern::Vin => vin(v),
            ValuePattern::Date => date(v),
            ValuePattern::Phone => phone(v),
            ValuePattern::Zip => zip(v),
        }
    }

    /// The first pattern that at least 90 % of `values` (and at least 3 of them) follow.
    pub fn of_values(values: &[String]) -> Option<ValuePattern> {
        let present: Vec<&str> = values
            .iter()
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .collect();
        if present.len() < 3 {
            return None;
        }
        ValuePattern::ALL.into_iter().find(|p| {
            let hits = present.iter().filter(|v| p.matches(v)).count();
            hits * 10 >= present.len() * 9
        })
    }
}

fn digits(v: &str) -> usize {
    v.bytes().filter(u8::is_ascii_digit).count()
}

fn email(v: &str) -> bool {
    let Some((user, domain)) = v.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && !v.contains(char::is_whitespace)
        && domain
            .rsplit_once('.')
            .is_some_and(|(host, tld)| !host.is_empty() && tld.len() >= 2)
}

fn ssn(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    parts.len() == 3
        && [3, 2, 4]
            .iter()
            .zip(&parts)
            .all(|(len, p)| p.len() == *len && p.bytes().all(|b| b.is_ascii_digit()))
}

fn url(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www."))
        && !v.contains(char::is_whitespace)
}

fn ipv4(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

fn ipv6(v: &str) -> bool {
    let colons = v.matches(':').count();
    (v.contains("::") && colons >= 2 || colons == 7)
        && colons <= 7
        && v.split(':')
            .all(|g| g.len() <= 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn mac(v: &str) -> bool {
    let parts: Vec<&str> = v.split([':', '-']).collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn vin(v: &str) -> bool {
    v.len() == 17
        && v.bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"IOQ".contains(&b)))
        && v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes().any(|b| b.is_ascii_uppercase())
}

fn date(v: &str) -> bool {
    let day = v.split(['T', ' ']).next().unwrap_or(v);
    let parts: Vec<&str> = day.split(['-', '/', '.']).collect();
    if parts.len() != 3 || !parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let n = |p: &str| p.parse::<u32>().unwrap_or(0);
    let (a, b, c) = (parts[0], parts[1], parts[2]);
    let month_day = |m: u32, d: u32| (1..=12).contains(&m) && (1..=31).contains(&d);
    match (a.len(), c.len()) {
        (4, 1..=2) => month_day(n(b), n(c)),
        (1..=2, 4) => month_day(n(b), n(a)) || month_day(n(a), n(b)),
        _ => false,
    }
}

fn phone(v: &str) -> bool {
    (7..=15).contains(&digits(v))
        && v.chars()
            .all(|c| c.is_ascii_digit() || " +-()./x".contains(c))
        && v.chars().any(|c| " +-()/.".contains(c))
}

fn zip(v: &str) -> bool {
    let (main, plus4) = v.split_once('-').unwrap_or((v, ""));
    main.len() == 5
        && main.bytes().all(|b| b.is_ascii_digit())
        && (plus4.is_empty() || (plus4.len() == 4 && plus4.bytes().all(|b| b.is_ascii_digit())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[&str]) -> Option<ValuePattern> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        ValuePattern::of_values(&values)
    }

    #[test]
    fn each_pattern_is_told_apart() {
        use ValuePattern::*;
        assert_eq!(
            of(&["a@b.org", "x.y@mail.example.com", "q@r.de"]),
            Some(Email)
        );
        assert_eq!(
            of(&["123-45-6789", "987-65-4321", "111-22-3333"]),
            Some(Ssn)
        );
        assert_eq!(
            of(&["https://a.org/x", "http://b.com", "www.c.net"]),
            Some(Url)
        );
        assert_eq!(
            of(&["10.0.0.1", "192.168.1.20", "8.8.8.8"]),
            Some(IpAddress)
        );
        assert_eq!(of(&["fe80::1", "2001:db8::2", "::1"]), Some(IpAddress));
        assert_eq!(
            of(&[
                "00:1a:2b:3c:4d:5e",
                "AA-BB-CC-DD-EE-FF",
                "01:02:03:04:05:06"
            ]),
            Some(MacAddress)
        );
        assert_eq!(
            of(&[
                "1HGCM82633A004352",
                "5YJSA1E26HF000337",
                "WVWZZZ1JZXW000001"
            ]),
            Some(Vin)
        );
        assert_eq!(of(&["2019-03-14", "2020-12-01", "1999-01-31"]), Some(Date));
        assert_eq!(
            of(&["14/03/2019", "3/4/2020", "2019-03-14T10:00:00"]),
            Some(Date)
        );
        assert_eq!(
            of(&["+41 44 123 45 67", "(617) 555-0100", "030/1234567"]),
            Some(Phone)
        );
        assert_eq!(of(&["02139", "10001-1234", "94105"]), Some(Zip));
        // Not a pattern: plain words, small numbers, too few values, a mix below 90 %.
        assert_eq!(of(&["red", "green", "blue"]), None);
        assert_eq!(of(&["12", "37", "90"]), None);
        assert_eq!(of(&["a@b.org", "c@d.org"]), None);
        assert_eq!(
            of(&["a@b.org", "c@d.org", "e@f.org", "x", "y", "z", "w", "v", "u", "t"]),
            None
        );
        assert_eq!(of(&["1.5", "2.25", "3.0"]), None);
    }
}
