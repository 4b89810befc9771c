//! The operations panel (`mcph serve --admin ADDR`, `mcph stats --web ADDR`).
