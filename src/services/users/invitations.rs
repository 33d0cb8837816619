//! Invitations that let more people join an account, and the one-time links
//! (invitations and password resets) they are redeemed with.

use chrono::Duration;

use super::{IssuedLink, SignedIn, UserError, UserService, random_hex, sha256_hex};
use crate::domain::ids::AccountId;
use crate::domain::password_link::{INVITATION_LIFETIME, LinkPurpose, PasswordLink};
use crate::domain::user::{Role, User};
use crate::storage::UserInsert;

impl UserService {
    /// Invites `email` to join the inviter's account: a one-time link, valid
    /// for `INVITATION_LIFETIME`, for the inviter to hand over. Made for any
    /// address, registered or not.
    pub async fn invite(&self, inviter: &User, email: String) -> Result<IssuedLink, UserError> {
        if inviter.role != Role::Owner {
            return Err(UserError::OwnersOnly);
        }
        let now = self.clock.now();
        self.invitations_per_account
            .take(inviter.account_id.as_str(), now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        let purpose = LinkPurpose::Invitation {
            account_id: inviter.account_id.clone(),
            email,
            invited_by: Some(inviter.id.clone()),
        };
        let issued = self.issue_link(purpose, INVITATION_LIFETIME).await?;
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %inviter.account_id, by = %inviter.id, "invitation made in the dashboard");
        Ok(issued)
    }

    /// The operator's way into an account (`freight users create`): a
    /// one-time link for `email` to join `account` as a user, choosing a
    /// password, as an invitation from a colleague does. The first start's
    /// account has no user until one is made this way.
    pub async fn invite_as_operator(
        &self,
        account: &AccountId,
        email: String,
    ) -> Result<IssuedLink, UserError> {
        let purpose = LinkPurpose::Invitation {
            account_id: account.clone(),
            email,
            invited_by: None,
        };
        let issued = self.issue_link(purpose, INVITATION_LIFETIME).await?;
        tracing::info!(%account, "invitation made by the operator");
        Ok(issued)
    }

    /// The account's invitations still open, oldest first; expired ones are
    /// removed on the way.
    pub async fn invitations(&self, account: &AccountId) -> Result<Vec<PasswordLink>, UserError> {
        let now = self.clock.now();
        let mut open = Vec::new();
        for link in self.storage.list_invitations(account).await? {
            if link.is_live(now) {
                open.push(link);
            } else {
                self.storage.take_password_link(&link.token_sha256).await?;
            }
        }
        open.sort_by_key(|link| link.created_at);
        Ok(open)
    }

    /// Withdraws an invitation of the account (by its token's hash, as the
    /// users page names it); false if there is none such.
    pub async fn withdraw_invitation(
        &self,
        account: &AccountId,
        token_sha256: &str,
    ) -> Result<bool, UserError> {
        let Some(link) = self.storage.get_password_link(token_sha256).await? else {
            return Ok(false);
        };
        if link.invited_email().is_none() || link.account_id() != account {
            return Ok(false);
        }
        Ok(self
            .storage
            .take_password_link(token_sha256)
            .await?
            .is_some())
    }

    /// The live link of a token, and the address whose password it sets.
    pub async fn link(&self, token: &str) -> Result<(PasswordLink, String), UserError> {
        let link = self
            .storage
            .get_password_link(&sha256_hex(token))
            .await?
            .filter(|link| link.is_live(self.clock.now()))
            .ok_or(UserError::LinkUnusable)?;
        let email = match &link.purpose {
            LinkPurpose::Invitation { email, .. } => email.clone(),
            LinkPurpose::Reset { user_id, .. } => {
                let user = self.storage.get_user(user_id).await?;
                user.ok_or(UserError::LinkUnusable)?.email
            }
        };
        Ok((link, email))
    }

    /// Redeems a link with the password its holder chose (checked by the
    /// caller with `check_new_password`): the invitee becomes a user of the
    /// account, or the user's password is replaced; either way signed in.
    /// The link works once, whatever the outcome.
    pub async fn redeem(&self, token: &str, password: String) -> Result<SignedIn, UserError> {
        let link = self
            .storage
            .take_password_link(&sha256_hex(token))
            .await?
            .filter(|link| link.is_live(self.clock.now()))
            .ok_or(UserError::LinkUnusable)?;
        match link.purpose {
            LinkPurpose::Invitation {
                account_id,
                email,
                invited_by,
            } => {
                // The operator's invitation makes an owner (it is how the
                // first start's account gets its first user); a user's, a member.
                let role = match invited_by {
                    None => Role::Owner,
                    Some(_) => Role::Member,
                };
                let user = self
                    .new_user(&account_id, email, password, (role, invited_by))
                    .await?;
                match self.storage.insert_user(&user, None).await? {
                    UserInsert::Inserted => {}
                    UserInsert::EmailTaken => return Err(UserError::EmailTaken),
                }
                tracing::info!(account = %account_id, user = %user.id, "invitation accepted");
                self.start_session(&user).await
            }
            LinkPurpose::Reset { user_id, .. } => {
                let user = self
                    .storage
                    .get_user(&user_id)
                    .await?
                    .ok_or(UserError::LinkUnusable)?;
                let user = self.with_password(user, password).await?;
                self.storage.delete_user_sessions(&user.id, None).await?;
                self.announced.notify();
                tracing::info!(account = %user.account_id, user = %user.id, "password reset");
                self.start_session(&user).await
            }
        }
    }

    /// Withdraws the open invitations `inviter` made; how many.
    pub(super) async fn withdraw_invitations_of(&self, inviter: &User) -> Result<usize, UserError> {
        let mut withdrawn = 0;
        for link in self.storage.list_invitations(&inviter.account_id).await? {
            let theirs = matches!(
                &link.purpose,
                LinkPurpose::Invitation { invited_by: Some(by), .. } if by == &inviter.id
            );
            if theirs
                && self
                    .storage
                    .take_password_link(&link.token_sha256)
                    .await?
                    .is_some()
            {
                withdrawn += 1;
            }
        }
        Ok(withdrawn)
    }

    pub(super) async fn issue_link(
        &self,
        purpose: LinkPurpose,
        lifetime: Duration,
    ) -> Result<IssuedLink, UserError> {
        let token = random_hex();
        let now = self.clock.now();
        let link = PasswordLink {
            token_sha256: sha256_hex(&token),
            purpose,
            created_at: now,
            expires_at: now + lifetime,
        };
        self.storage.put_password_link(&link).await?;
        Ok(IssuedLink { token, link })
    }
}
