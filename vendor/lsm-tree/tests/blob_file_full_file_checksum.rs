use lsm_tree::{get_tmp_folder, AbstractTree, Config, KvSeparationOptions, SequenceNumberCounter};
use test_log::test;
use xxhash_rust::xxh3::xxh3_128;

#[test]
fn blob_file_full_file_checksum() -> lsm_tree::Result<()> {
    let folder = get_tmp_folder();

    {
        let tree = Config::new(
            &folder,
            SequenceNumberCounter::default(),
            SequenceNumberCounter::default(),
        )
        .with_kv_separation(Some(KvSeparationOptions::default().separation_threshold(1)))
        .open()?;

        for key in ('a'..='z').map(|c| c.to_string()) {
            let value = nanoid::nanoid!();
            tree.insert(key, value.as_bytes(), 0);
        }
        tree.flush_active_memtable(0)?;

        let version = tree.current_version();
        let blob_file = version.blob_files.iter().next().unwrap();

        let expected_checksum = blob_file.checksum().into_u128();
        let real_checksum = xxh3_128(&std::fs::read(blob_file.path())?);
        assert_eq!(
            real_checksum, expected_checksum,
            "full file checksum mismatch",
        );
    }

    {
        let tree = Config::new(
            &folder,
            SequenceNumberCounter::default(),
            SequenceNumberCounter::default(),
        )
        .with_kv_separation(Some(KvSeparationOptions::default().separation_threshold(1)))
        .open()?;

        let version = tree.current_version();
        let blob_file = version.blob_files.iter().next().unwrap();

        let expected_checksum = blob_file.checksum().into_u128();
        let real_checksum = xxh3_128(&std::fs::read(blob_file.path())?);
        assert_eq!(
            real_checksum, expected_checksum,
            "full file checksum mismatch",
        );
    }

    Ok(())
}

#[test]
fn blob_file_full_file_detect_corruption() -> lsm_tree::Result<()> {
    let folder = get_tmp_folder();

    {
        let tree = Config::new(
            &folder,
            SequenceNumberCounter::default(),
            SequenceNumberCounter::default(),
        )
        .with_kv_separation(Some(KvSeparationOptions::default().separation_threshold(1)))
        .open()?;

        for key in ('a'..='z').map(|c| c.to_string()) {
            let value = nanoid::nanoid!();
            tree.insert(key, value.as_bytes(), 0);
        }
        tree.flush_active_memtable(0)?;

        let version = tree.current_version();
        let blob_file = version.blob_files.iter().next().unwrap();

        let expected_checksum = blob_file.checksum().into_u128();
        let real_checksum = xxh3_128(&std::fs::read(blob_file.path())?);
        assert_eq!(
            real_checksum, expected_checksum,
            "full file checksum mismatch",
        );
    }

    {
        let tree = Config::new(
            &folder,
            SequenceNumberCounter::default(),
            SequenceNumberCounter::default(),
        )
        .with_kv_separation(Some(KvSeparationOptions::default().separation_threshold(1)))
        .open()?;

        let version = tree.current_version();
        let blob_file = version.blob_files.iter().next().unwrap();

        {
            use std::io::{Seek, Write};

            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(blob_file.path())?;

            f.seek(std::io::SeekFrom::Start(100))?;
            f.write_all(b"!")?;
            f.sync_all()?;
        }

        let expected_checksum = blob_file.checksum().into_u128();
        let real_checksum = xxh3_128(&std::fs::read(blob_file.path())?);
        assert_ne!(
            real_checksum, expected_checksum,
            "full file checksum should not match",
        );
    }

    Ok(())
}
